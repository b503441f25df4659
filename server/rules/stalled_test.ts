import assert from "node:assert/strict";
import { checkTimers, createRunRuleState, observeActivity, observePoints } from "./run_rules.ts";
import type { RuleEvent } from "./rule_event.ts";
import type { RunRuleState } from "./run_rules.ts";
import { resolveRulesConfig } from "./rules_config.ts";

const T0 = 1_700_000_000;

function stalled(state: RunRuleState, nowS: number, cfg = resolveRulesConfig()): RuleEvent[] {
  return checkTimers(state, nowS, cfg).filter((e) => e.type === "STALLED");
}

Deno.test("STALLED fires 15 minutes after the last activity, once per silence", () => {
  const state = createRunRuleState({ startedAtS: T0 });
  observeActivity(state, T0 + 100);
  assert.deepEqual(stalled(state, T0 + 100 + 899), []);
  const events = stalled(state, T0 + 100 + 900);
  assert.equal(events.length, 1);
  assert.equal(events[0].severity, "warning");
  assert.match(events[0].message, /^The run produced no metric and no log line for 15 minutes/);
  assert.deepEqual(events[0].data, { idle_s: 900, last_activity_at: T0 + 100, threshold_s: 900 });
  // Still silent: no second event.
  assert.deepEqual(stalled(state, T0 + 5000), []);
});

Deno.test("STALLED re-arms when the run shows life again", () => {
  const cases: { name: string; revive: (state: RunRuleState, ts: number) => void }[] = [
    { name: "a log line", revive: (s, ts) => observeActivity(s, ts) },
    {
      name: "a training metric",
      revive: (s, ts) => observePoints(s, [{ key: "train/acc", step: 9, value: 1, wall_time: ts }]),
    },
  ];
  for (const { name, revive } of cases) {
    const state = createRunRuleState({ startedAtS: T0 });
    assert.equal(stalled(state, T0 + 900).length, 1, name);
    revive(state, T0 + 1000);
    assert.deepEqual(stalled(state, T0 + 1800), [], name);
    assert.equal(stalled(state, T0 + 1900).length, 1, name);
  }
});

Deno.test("STALLED ignores system metrics and activity older than what it saw", () => {
  const state = createRunRuleState({ startedAtS: T0 });
  observeActivity(state, T0 + 300);
  observePoints(state, [
    { key: "sys/gpu0/util", step: 1, value: 99, wall_time: T0 + 1000 },
    { key: "sys/cpu_pct", step: 1, value: 99, wall_time: T0 + 1000 },
  ]);
  observeActivity(state, T0 + 200); // a late, older log line
  const events = stalled(state, T0 + 1200);
  assert.equal(events.length, 1);
  assert.equal(events[0].data.last_activity_at, T0 + 300);
});

Deno.test("STALLED counts from the start when the run never produced anything", () => {
  const state = createRunRuleState({ startedAtS: T0 });
  const events = stalled(state, T0 + 960);
  assert.equal(events.length, 1);
  assert.match(
    events[0].message,
    /has produced no metric and no log line since it started for 16 minutes/,
  );
});

Deno.test("STALLED without a start time counts from the first check", () => {
  const state = createRunRuleState();
  assert.deepEqual(stalled(state, T0), []);
  assert.deepEqual(stalled(state, T0 + 899), []);
  assert.equal(stalled(state, T0 + 900).length, 1);
});

Deno.test("STALLED uses the configured silence", () => {
  const state = createRunRuleState({ startedAtS: T0 });
  const cfg = resolveRulesConfig({ stalledAfterS: 60 });
  assert.deepEqual(stalled(state, T0 + 59, cfg), []);
  assert.match(stalled(state, T0 + 90, cfg)[0].message, /for 1\.5 minutes \(threshold 1\)/);
});
