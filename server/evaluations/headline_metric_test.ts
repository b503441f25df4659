import { assertEquals } from "../../tests/assert.ts";
import { chooseEvaluationKey, headlineMetric, metricNumber } from "./headline_metric.ts";

const dirs = { accuracy: "max", loss: "min", "eval/loss": "min", f1: "max" } as const;

Deno.test("chooseEvaluationKey() prefers the primary metric, then its last path part", () => {
  const table: [string, Record<string, unknown>[], string | null, string | null][] = [
    ["exact primary key", [{ "eval/loss": 0.3, accuracy: 0.9 }], "eval/loss", "eval/loss"],
    ["primary's last part", [{ loss: 0.3, accuracy: 0.9 }], "eval/loss", "loss"],
    ["same last part elsewhere", [{ "eval/loss": 0.3, f1: 0.5 }], "val/loss", "eval/loss"],
    ["most common key", [{ accuracy: 0.9 }, { accuracy: 0.8, f1: 0.5 }], "train/loss", "accuracy"],
    ["first seen on a tie", [{ f1: 0.5, accuracy: 0.9 }], null, "f1"],
    ["NaN values do not count", [{ loss: "NaN", accuracy: 0.9 }], "loss", "accuracy"],
    ["keys without a direction do not count", [{ tokens: 5 }], null, null],
  ];
  for (const [name, results, preferred, want] of table) {
    assertEquals(chooseEvaluationKey(results, preferred, dirs)?.key ?? null, want, name);
  }
});

Deno.test("headlineMetric() falls back to the first numeric result", () => {
  assertEquals(headlineMetric({ accuracy: 0.9 }, null, dirs), { key: "accuracy", value: 0.9 });
  assertEquals(headlineMetric({ note: "x", tokens: 5 }, null, dirs), { key: "tokens", value: 5 });
  assertEquals(headlineMetric({ note: "x" }, null, dirs), null);
});

Deno.test("metricNumber() reads numbers and the spelled-out non-finite values only", () => {
  assertEquals([1.5, "NaN", "-Infinity", "1.5", null].map(metricNumber), [
    1.5,
    NaN,
    -Infinity,
    null,
    null,
  ]);
});
