import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { assertEquals } from "../../tests/assert.ts";
import { aWindow } from "./_fixtures.ts";
import { metricTrend, stepRate } from "./trend.ts";

const falling = Array.from({ length: 40 }, (_, i) => 2 - i * 0.04);
const rising = Array.from({ length: 40 }, (_, i) => 0.5 + i * 0.01);
const flat = Array.from({ length: 40 }, (_, i) => 1 + (i % 2 ? 0.001 : -0.001));

Deno.test("metricTrend() judges the recent window by the metric's direction", () => {
  const table: [string, number[], MetricDirection, string][] = [
    ["a falling loss is improving", falling, "min", "improving"],
    ["a falling accuracy is worsening", falling, "max", "worsening"],
    ["a rising loss is worsening", rising, "min", "worsening"],
    ["a rising accuracy is improving", rising, "max", "improving"],
    ["a loss moving under 2% is flat", flat, "min", "flat"],
    ["three points are too few", [3, 2, 1], "min", "unknown"],
  ];
  for (const [name, values, direction, verdict] of table) {
    assertEquals(metricTrend(aWindow("m", values), direction).verdict, verdict, name);
  }
});

Deno.test("metricTrend() reports the halves it compared, skipping NaN points", () => {
  const t = metricTrend(aWindow("loss", [4, 4, NaN, 2, 2]), "min");
  assertEquals(t.window, { from_step: 0, to_step: 4, points: 4 });
  assertEquals([t.earlier_mean, t.later_mean, t.change, t.relative_change], [4, 2, -2, -0.5]);
  assertEquals(t.explanation.includes("fell from 4 to 2 (-50%)"), true, t.explanation);
});

Deno.test("metricTrend() looks only at the last 50 finite points", () => {
  // A long fall followed by 50 flat points: the recent window is flat.
  const values = [...Array.from({ length: 200 }, (_, i) => 10 - i * 0.04), ...Array(50).fill(2)];
  assertEquals(metricTrend(aWindow("loss", values), "min").verdict, "flat");
});

Deno.test("stepRate() is steps over seconds of the newest points", () => {
  const table: [string, ReturnType<typeof aWindow>, number | null][] = [
    ["10 steps/s", aWindow("loss", Array(20).fill(1), { secondsPerStep: 0.1 }), 10],
    [
      "every 5 steps, 2 s apart",
      aWindow("loss", Array(20).fill(1), { every: 5, secondsPerStep: 0.4 }),
      2.5,
    ],
    ["one point has no rate", aWindow("loss", [1]), null],
    ["no time passed", aWindow("loss", [1, 2], { secondsPerStep: 0 }), null],
  ];
  for (const [name, w, want] of table) {
    const r = stepRate(w);
    assertEquals(r === null ? null : Math.round(r.steps_per_s * 1000) / 1000, want, name);
  }
});

Deno.test("metricTrend() calls a metric that levelled off 80% above its best worsening, not flat", () => {
  // An eval loss that bottomed at 0.1 and then rose to 0.18, where it stays: the recent
  // window alone moves +0.6%.
  const level = Array.from({ length: 40 }, (_, i) => 0.18 + (i < 20 ? 0 : 0.001));
  const t = metricTrend(aWindow("eval/loss", level), "min", { value: 0.1, step: 6 });
  assertEquals(t.verdict, "worsening", t.explanation);
  assertEquals(Math.round(t.from_best! * 100), 81);
  assertEquals(
    t.explanation.startsWith("the latest level 0.181 is +81% off its best 0.1 (step 6): worsening"),
    true,
    t.explanation,
  );
  assertEquals(
    metricTrend(aWindow("acc", level.map((v) => 1 - v)), "max", {
      value: 0.95,
      step: 6,
    }).verdict,
    "worsening",
  );
});

Deno.test("metricTrend() does not call a noisy flat loss worsening for being above its luckiest point", () => {
  const noisy = Array.from({ length: 50 }, (_, i) => 0.5 + (i % 2 ? 0.1 : -0.1));
  const t = metricTrend(aWindow("train/loss", noisy), "min", { value: 0.3, step: 10 });
  assertEquals(t.verdict, "flat", t.explanation);
  assertEquals(t.explanation.includes("off its best 0.3"), true, t.explanation);
});
