import assert from "node:assert/strict";
import { createRunRuleState, observePoints } from "./run_rules.ts";
import { range, series } from "./_test_series.ts";

Deno.test("observePoints() raises LOSS_NAN for NaN and ±Inf loss values, once per key", () => {
  const cases: { name: string; bad: number; spelled: string; json: unknown }[] = [
    { name: "NaN", bad: Number.NaN, spelled: "NaN", json: "NaN" },
    { name: "+Inf", bad: Infinity, spelled: "Infinity", json: "Infinity" },
    { name: "-Inf", bad: -Infinity, spelled: "-Infinity", json: "-Infinity" },
  ];
  for (const { name, bad, spelled, json } of cases) {
    const state = createRunRuleState();
    const events = observePoints(
      state,
      series("train/loss", range(100, 130), (s) => (s >= 120 ? bad : 1)),
    );
    assert.equal(events.length, 1, name);
    assert.equal(events[0].type, "LOSS_NAN");
    assert.equal(events[0].severity, "critical");
    assert.equal(events[0].message, `Loss "train/loss" is ${spelled} at step 120`);
    assert.deepEqual(events[0].data, { key: "train/loss", step: 120, value: json });
    // Still NaN later: the key already fired for this run.
    assert.deepEqual(observePoints(state, series("train/loss", [200], () => bad)), [], name);
  }
});

Deno.test("observePoints() raises LOSS_NAN separately for each loss key", () => {
  const state = createRunRuleState();
  const events = observePoints(state, [
    ...series("train/loss", [5], () => Number.NaN),
    ...series("val/loss", [5], () => Number.NaN),
    ...series("aux/recon_loss", [6], () => Number.NaN),
  ]);
  assert.deepEqual(events.map((e) => e.data.key), ["train/loss", "val/loss", "aux/recon_loss"]);
});

Deno.test("observePoints() ignores non-finite values of keys that are not losses", () => {
  const state = createRunRuleState();
  const events = observePoints(state, [
    ...series("train/accuracy", [1], () => Number.NaN),
    ...series("lr", [1], () => Infinity),
  ]);
  assert.deepEqual(events, []);
});

Deno.test("observePoints() keeps NaN out of the spike baseline", () => {
  const state = createRunRuleState();
  observePoints(state, series("train/loss", range(0, 30), (s) => (s % 2 ? Number.NaN : 1)));
  assert.deepEqual(
    state.spikes.get("train/loss")!.window.points.map((p) => p.step),
    range(0, 30).filter((s) => s % 2 === 0),
  );
});
