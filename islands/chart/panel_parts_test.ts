import { h } from "preact";
import { renderToString } from "preact-render-to-string";
import { assert, assertEquals, assertFalse } from "../../tests/assert.ts";
import { headline, PanelHead, PanelLegend } from "./panel_parts.tsx";
import { fromApi } from "./series.ts";
import { EMPTY_LEGEND } from "./legend.ts";

const series = (run_id: string, values: number[], walls: number[]) =>
  fromApi({
    run_id,
    key: "loss",
    steps: values.map((_, i) => i * 10),
    values,
    wall_times: walls,
    total_points: values.length,
    downsampled: false,
  });
const a = { label: "a", series: series("a", [3, 1, 2], [100, 101, 102]) };
const b = { label: "b", series: series("b", [4, 1.5, 0.5, 0.7], [90, 91, 92, 200]) };

Deno.test("headline() gives the newest point of the runs and the best of them, each with its run", () => {
  assertEquals(headline([a, b], "min"), {
    latest: { step: 30, value: 0.7, label: "b" },
    best: { step: 20, value: 0.5, label: "b" },
  });
  assertEquals(headline([a, b], "max").best, { step: 0, value: 4, label: "b" });
  assertEquals(headline([a], null).best, null);
  assertEquals(headline([{ label: "c", series: undefined }], "min"), { latest: null, best: null });
});

const head = (o: Record<string, unknown>) =>
  renderToString(h(PanelHead, {
    metric: "loss",
    direction: "min",
    primary: true,
    runs: [a],
    smoothing: 0.6,
    onSmooth: () => {},
    x: "step",
    onX: () => {},
    log: false,
    onLog: () => {},
    zoomed: false,
    onReset: () => {},
    ...o,
  }));

Deno.test("PanelHead shows ★, the direction and exact values, and its own controls", () => {
  const html = head({});
  assert(html.includes("★"), html);
  assert(html.includes('loss <span title="lower is better">↓</span>'), html);
  assert(html.includes("latest <strong>2</strong> @ 20"), html);
  assert(html.includes("best <strong>1</strong> @ 10"), html);
  assert(html.includes('type="range"') && html.includes("<select"), html);
  assertFalse(html.includes("chart-reset"), "no reset before a zoom");
  assert(head({ zoomed: true }).includes("chart-reset"));
});

Deno.test("PanelHead of a composed panel leaves smoothing and the x axis to the page", () => {
  const html = head({ onSmooth: null, onX: null, primary: false });
  assertFalse(html.includes('type="range"'), html);
  assertFalse(html.includes("<select"), html);
  assertFalse(html.includes("★"), html);
});

Deno.test("PanelLegend marks hidden runs as not pressed", () => {
  const runs = ["a", "b"].map((id) => ({ id, label: id, color: "red", live: false }));
  const html = renderToString(
    h(PanelLegend, {
      metric: "loss",
      runs,
      legend: { ...EMPTY_LEGEND, hidden: ["b"] },
      onLegend: () => {},
    }),
  );
  assert(html.includes('data-run="a" aria-pressed="true"'), html);
  assert(html.includes('data-run="b" aria-pressed="false"'), html);
});
