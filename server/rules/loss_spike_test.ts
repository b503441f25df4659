import assert from "node:assert/strict";
import { createRunRuleState, observePoints } from "./run_rules.ts";
import { resolveRulesConfig } from "./rules_config.ts";
import type { RuleEvent } from "./rule_event.ts";
import { noisyLoss, range, series } from "./_test_series.ts";

const KEY = "train/loss";

/** Feeds `values(step)` for the given steps one point at a time, as live ingest would. */
function feed(steps: number[], values: (step: number) => number): RuleEvent[] {
  const state = createRunRuleState();
  return steps.flatMap((s) => observePoints(state, series(KEY, [s], values)));
}

function spikes(events: RuleEvent[]): number[] {
  return events.filter((e) => e.type === "LOSS_SPIKE").map((e) => e.data.step as number);
}

Deno.test("LOSS_SPIKE: one jump far above the recent median fires once, at its step", () => {
  const events = feed(range(0, 400), (s) => (s === 300 ? 5 : noisyLoss(s)));
  assert.deepEqual(spikes(events), [300]);
  const e = events[0];
  assert.equal(e.severity, "warning");
  assert.match(
    e.message,
    /^Loss "train\/loss" spiked to 5 at step 300: the median of the previous 50 points is 1\.7\d* /,
  );
  assert.equal(e.data.window, 50);
});

Deno.test("LOSS_SPIKE: behaviour by series (table)", () => {
  const cases: { name: string; steps: number[]; f: (s: number) => number; want: number[] }[] = [
    {
      name: "a smooth noisy descent never fires",
      steps: range(0, 1000),
      f: noisyLoss,
      want: [],
    },
    {
      name: "a jump within the first 20 points is not judged",
      steps: range(0, 100),
      f: (s) => (s === 15 ? 50 : noisyLoss(s)),
      want: [],
    },
    {
      name: "the 21st point is judged",
      steps: range(0, 100),
      f: (s) => (s === 20 ? 50 : noisyLoss(s)),
      want: [20],
    },
    {
      name: "a jump of 40% over a flat series is below the 50% floor",
      steps: range(0, 100),
      f: (s) => (s === 60 ? 1.4 : 1),
      want: [],
    },
    {
      name: "a jump of 60% over a flat series fires (MAD 0)",
      steps: range(0, 100),
      f: (s) => (s === 60 ? 1.6 : 1),
      want: [60],
    },
    {
      name: "a 60% jump within noise of 10 × MAD does not fire",
      steps: range(0, 100),
      f: (s) => (s === 60 ? 1.6 : s % 2 ? 0.9 : 1.1),
      want: [],
    },
    {
      name: "a burst of spikes raises one event per 200 steps",
      steps: range(0, 700),
      f: (s) => (s >= 300 && s < 330 && s % 3 === 0 ? 6 : noisyLoss(s)),
      want: [300],
    },
    {
      name: "re-arms 200 steps after the last event",
      steps: range(0, 700),
      f: (s) => ([300, 450, 500, 650].includes(s) ? 6 : noisyLoss(s)),
      want: [300, 500],
    },
    {
      name: "steps need not be contiguous: the cooldown counts steps, not points",
      steps: range(0, 200).map((i) => i * 10),
      f: (s) => ([1000, 1100, 1200].includes(s) ? 6 : noisyLoss(s / 10)),
      want: [1000, 1200],
    },
  ];
  for (const { name, steps, f, want } of cases) {
    assert.deepEqual(spikes(feed(steps, f)), want, name);
  }
});

Deno.test("LOSS_SPIKE: a repeated step replaces its value instead of counting twice", () => {
  const state = createRunRuleState();
  // 19 distinct steps, each written twice: still 19 points of history, too few to judge.
  const history = series(KEY, range(0, 19), noisyLoss);
  observePoints(state, history);
  observePoints(state, history);
  assert.equal(state.spikes.get(KEY)!.window.points.length, 19);
  assert.deepEqual(observePoints(state, series(KEY, [19], () => 50)), []);
  // A rewrite of the newest step is judged against the steps before it, not against itself.
  const rewrite = observePoints(state, series(KEY, [19], () => 60));
  assert.deepEqual(rewrite, []);
  const next = observePoints(state, series(KEY, [20], () => 60));
  assert.deepEqual(spikes(next), [20]);
});

Deno.test("LOSS_SPIKE: a late point for an older step joins the baseline without being judged", () => {
  const state = createRunRuleState();
  observePoints(state, series(KEY, range(0, 100), noisyLoss));
  assert.deepEqual(observePoints(state, series(KEY, [70], () => 50)), []);
  assert.equal(state.spikes.get(KEY)!.window.points.find((p) => p.step === 70)!.value, 50);
});

Deno.test("LOSS_SPIKE: one batch is judged in step order whatever its order", () => {
  const points = series(KEY, range(0, 400), (s) => (s === 300 ? 5 : noisyLoss(s))).reverse();
  assert.deepEqual(spikes(observePoints(createRunRuleState(), points)), [300]);
});

Deno.test("LOSS_SPIKE: thresholds come from the config", () => {
  const cfg = resolveRulesConfig({ lossSpikeMinPoints: 5, lossSpikeCooldownSteps: 10 });
  const state = createRunRuleState();
  const f = (s: number) => ([6, 12, 14].includes(s) ? 9 : 1);
  const events = observePoints(state, series(KEY, range(0, 20), f), cfg);
  assert.deepEqual(spikes(events), [6]);
  // Step 12 is judged against a window that already holds the spike at step 6.
  const cfg2 = resolveRulesConfig({ lossSpikeMinPoints: 5, lossSpikeCooldownSteps: 5 });
  assert.deepEqual(
    spikes(observePoints(createRunRuleState(), series(KEY, range(0, 20), f), cfg2)),
    [6, 12],
  );
});

Deno.test("LOSS_SPIKE: the window stays bounded on a long run", () => {
  const state = createRunRuleState();
  observePoints(state, series(KEY, range(0, 20_000), noisyLoss));
  assert.equal(state.spikes.get(KEY)!.window.points.length, 50);
  assert.equal(state.spikes.get(KEY)!.window.points[0].step, 19_950);
});
