import assert from "node:assert/strict";
import {
  checkTimers,
  createRunRuleState,
  observePoints,
  rebuildRunRuleState,
} from "./run_rules.ts";
import type { MetricPoint } from "./rule_event.ts";
import { loadKerasExp0 } from "./_keras_fixture.ts";
import { noisyLoss, range, series } from "./_test_series.ts";

const T0 = 1_700_000_000;

/** A run with train loss every step, eval loss every 100 steps, a spike, a NaN, GPU samples. */
function syntheticRun(): MetricPoint[] {
  const evals = [1.0, 0.8, 0.7, 0.75, 0.72, 0.77, 0.78, 0.79];
  return [
    ...series("train/loss", range(0, 800), (s) => (s === 450 ? 9 : noisyLoss(s)), T0),
    ...series("train/acc", range(0, 800), (s) => s / 800, T0),
    ...series("val/loss", evals.map((_, i) => (i + 1) * 100), (s) => evals[s / 100 - 1], T0),
    ...series("aux/kl_loss", [799], () => Number.NaN, T0),
    ...range(0, 80).map((i) => ({
      key: "sys/gpu0/util",
      step: i,
      value: 10,
      wall_time: T0 + i * 10,
    })),
  ];
}

/** Splits points into batches of `size`, in step order, as agents send them. */
function batches(points: MetricPoint[], size: number): MetricPoint[][] {
  const ordered = [...points].sort((a, b) => a.step - b.step);
  const out: MetricPoint[][] = [];
  for (let i = 0; i < ordered.length; i += size) out.push(ordered.slice(i, i + size));
  return out;
}

Deno.test("observePoints() raises each rule's event once over a whole synthetic run", () => {
  const state = createRunRuleState({ startedAtS: T0 });
  const events = batches(syntheticRun(), 37).flatMap((b) => observePoints(state, b));
  assert.deepEqual(
    events.map((e) => `${e.type}@${e.data.step}`),
    ["LOSS_SPIKE@450", "OVERFITTING_SUSPECTED@600", "LOSS_NAN@799"],
  );
});

Deno.test("rebuildRunRuleState() from stored points equals the state live ingest built", () => {
  const points = syntheticRun();
  const live = createRunRuleState({ startedAtS: T0 });
  for (const b of batches(points, 37)) observePoints(live, b);
  const rebuilt = rebuildRunRuleState(points, { startedAtS: T0 });
  assert.deepEqual(rebuilt, live);
  // After a restart nothing fires again for problems already reported.
  assert.deepEqual(observePoints(rebuilt, points.filter((p) => p.step > 700)), []);
});

Deno.test("observePoints() given the same points again changes nothing and raises nothing", async () => {
  for (
    const [name, points] of [["synthetic", syntheticRun()], [
      "keras-exp0",
      await loadKerasExp0(),
    ]] as const
  ) {
    const state = createRunRuleState({ startedAtS: T0 });
    const first = observePoints(state, points);
    assert.ok(first.length > 0, name);
    const snapshot = structuredClone(state);
    assert.deepEqual(observePoints(state, points), [], name);
    assert.deepEqual(state, snapshot, name);
  }
});

Deno.test("rebuildRunRuleState() keeps the time-driven rules' inputs", () => {
  const state = rebuildRunRuleState(syntheticRun(), { startedAtS: T0 });
  assert.equal(state.stalled.lastActivityAt, T0 + 800);
  // GPU samples at 10% from T0 to T0 + 790: the rule fires once checked after the warm-up.
  const events = checkTimers(state, T0 + 790);
  assert.deepEqual(events.map((e) => e.type), ["GPU_UNDERUTILIZED"]);
});

Deno.test("RunRuleState stays bounded on a long run with many evaluations", () => {
  const state = createRunRuleState({ startedAtS: T0 });
  for (
    const b of batches(
      [
        ...series("train/loss", range(0, 50_000), noisyLoss, T0),
        ...series("val/loss", range(1, 500).map((i) => i * 100), (s) => 1 / s, T0),
        ...range(0, 5_000).map((i) => ({
          key: "sys/gpu0/util",
          step: i,
          value: 50,
          wall_time: T0 + i * 10,
        })),
      ],
      1_000,
    )
  ) observePoints(state, b);
  assert.equal(state.spikes.get("train/loss")!.window.points.length, 50);
  assert.equal(state.overfitting.series.get("val/loss")!.recent.length, 3);
  assert.ok(state.gpu.samples.length <= 31, `${state.gpu.samples.length} GPU samples kept`);
});
