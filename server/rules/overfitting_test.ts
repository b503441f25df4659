import assert from "node:assert/strict";
import { createRunRuleState, observePoints } from "./run_rules.ts";
import type { MetricPoint, RuleEvent } from "./rule_event.ts";
import { loadKerasExp0 } from "./_keras_fixture.ts";
import { range, series } from "./_test_series.ts";

function overfits(events: RuleEvent[]): RuleEvent[] {
  return events.filter((e) => e.type === "OVERFITTING_SUSPECTED");
}

/** Eval points at steps 100, 200, … with the given values, and a train loss at every step. */
function run(
  evals: number[],
  train: (step: number) => number = (s) => 2 / (1 + s / 100),
  evalKey = "val/loss",
  trainKey = "train/loss",
): MetricPoint[] {
  const last = evals.length * 100;
  return [
    ...series(trainKey, range(0, last + 1), train),
    ...series(evalKey, evals.map((_, i) => (i + 1) * 100), (s) => evals[s / 100 - 1]),
  ];
}

/** Feeds the points step by step, the way live ingest sees them, and collects the events. */
function feedByStep(points: MetricPoint[]): { events: RuleEvent[]; steps: number[] } {
  const state = createRunRuleState();
  const byStep = Map.groupBy(points, (p) => p.step);
  const events: RuleEvent[] = [];
  const fired: number[] = [];
  for (const step of [...byStep.keys()].sort((a, b) => a - b)) {
    const found = overfits(observePoints(state, byStep.get(step)!));
    events.push(...found);
    if (found.length > 0) fired.push(step);
  }
  return { events, steps: fired };
}

Deno.test("OVERFITTING_SUSPECTED: behaviour by eval series (table)", () => {
  const cases: { name: string; points: MetricPoint[]; want: number[] }[] = [
    {
      name: "fires when 2 of the last 3 evaluations rose ≥ 5% over the minimum",
      points: run([1.0, 0.8, 0.7, 0.75, 0.72, 0.76]),
      want: [600],
    },
    {
      name: "fires at the second risen evaluation when they are consecutive",
      points: run([1.0, 0.8, 0.7, 0.75, 0.76, 0.77, 0.78]),
      want: [500],
    },
    {
      name: "one risen evaluation of the last three is not enough",
      points: run([1.0, 0.8, 0.7, 0.75, 0.72, 0.71]),
      want: [],
    },
    {
      name: "rises below 5% are noise",
      points: run([1.0, 0.8, 0.7, 0.73, 0.734, 0.72]),
      want: [],
    },
    {
      name: "a steadily falling eval loss never fires",
      points: run([1.0, 0.9, 0.8, 0.7, 0.6, 0.5]),
      want: [],
    },
    {
      name: "does not fire while the train loss rises too (that is divergence, not overfitting)",
      points: run([1.0, 0.8, 0.7, 0.75, 0.76, 0.77], (s) => 1 + s / 1000),
      want: [],
    },
    {
      name: "does not fire without any train loss",
      points: series(
        "val/loss",
        [100, 200, 300, 400, 500],
        (s) => [1, 0.7, 0.8, 0.8, 0.8][s / 100 - 1],
      ),
      want: [],
    },
    {
      name: "fires once per minimum, then again after a new minimum",
      points: run([1.0, 0.7, 0.75, 0.76, 0.77, 0.78, 0.6, 0.65, 0.66, 0.67]),
      want: [400, 900],
    },
    {
      name: "pairs any eval family key with any train family key",
      points: run([1.0, 0.7, 0.75, 0.76], undefined, "eval_loss", "loss"),
      want: [400],
    },
  ];
  for (const { name, points, want } of cases) {
    assert.deepEqual(feedByStep(points).steps, want, name);
    // The same points in one batch (a replay after restart) are judged step by step too.
    assert.equal(overfits(observePoints(createRunRuleState(), points)).length, want.length, name);
  }
});

Deno.test("OVERFITTING_SUSPECTED: the message quotes the rise, the minimum and the train loss", () => {
  const { events } = feedByStep(run([1.0, 0.8, 0.7, 0.75, 0.72, 0.77]));
  assert.equal(events.length, 1);
  assert.equal(events[0].severity, "warning");
  assert.equal(
    events[0].message,
    'Validation loss "val/loss" rose 10.0% above its minimum 0.7 (step 300) while train loss ' +
      'kept falling ("train/loss" 0.5 at step 300 → 0.2857 at step 600)',
  );
  assert.equal(events[0].data.min_step, 300);
  assert.deepEqual(events[0].data.risen_steps, [400, 600]);
});

Deno.test("OVERFITTING_SUSPECTED: an eval point arriving before the train point of its step still counts", () => {
  const points = run([1.0, 0.7, 0.75, 0.76]);
  const state = createRunRuleState();
  const evalFirst = [...points].sort((a, b) => a.step - b.step || (a.key === "val/loss" ? -1 : 1));
  const events = evalFirst.flatMap((p) => overfits(observePoints(state, [p])));
  assert.equal(events.length, 1);
  assert.equal(events[0].data.step, 400);
});

Deno.test("OVERFITTING_SUSPECTED fires on the real Keras run keras-exp0, at epoch 9", async () => {
  const points = await loadKerasExp0();
  const byEpoch = feedByStep(points);
  assert.deepEqual(byEpoch.steps, [9]);
  const event = byEpoch.events[0];
  assert.match(
    event.message,
    /^Validation loss "validation\/epoch_loss" rose 11\.6% above its minimum 0\.07555 \(step 6\) while train loss kept falling \("train\/epoch_loss" 0\.0465 at step 6 → 0\.03193 at step 9\)$/,
  );
  assert.equal(event.data.train_key, "train/epoch_loss");
  assert.deepEqual(event.data.risen_steps, [7, 9]);
  // The whole run replayed at once, in file order, raises the same single event.
  assert.deepEqual(overfits(observePoints(createRunRuleState(), points)).map((e) => e.message), [
    event.message,
  ]);
});

Deno.test("OVERFITTING_SUSPECTED stays silent on the first seven epochs (0..6) of keras-exp0", async () => {
  const points = (await loadKerasExp0()).filter((p) => p.step <= 6);
  assert.deepEqual(feedByStep(points).events, []);
  const state = createRunRuleState();
  assert.deepEqual(overfits(observePoints(state, points)), []);
  // Epochs 7 and 8 alone are one risen evaluation (8 is only 2.8% above the minimum).
  const rest = (await loadKerasExp0()).filter((p) => p.step > 6);
  assert.deepEqual(overfits(observePoints(state, rest.filter((p) => p.step <= 8))), []);
  assert.equal(overfits(observePoints(state, rest.filter((p) => p.step === 9))).length, 1);
});
