import assert from "node:assert/strict";
import { checkTimers, createRunRuleState, observeGpuUtil, observePoints } from "./run_rules.ts";
import type { RuleEvent } from "./rule_event.ts";
import { resolveRulesConfig } from "./rules_config.ts";
import { DEFAULT_RULES_CONFIG } from "./rules_config.ts";

const T0 = 1_700_000_000;

/**
 * A run started at T0 whose GPUs report `util(t)` every 10 s and which is checked every 10 s
 * for `minutes`; returns the minutes (after T0) at which GPU_UNDERUTILIZED fired.
 */
function simulate(
  util: (tS: number) => number,
  minutes: number,
  gpus = 1,
  cfg = DEFAULT_RULES_CONFIG,
): { at: number[]; events: RuleEvent[] } {
  const state = createRunRuleState({ startedAtS: T0 });
  const events: RuleEvent[] = [];
  const at: number[] = [];
  for (let t = 0; t <= minutes * 60; t += 10) {
    for (let g = 0; g < gpus; g++) observeGpuUtil(state, T0 + t, util(t) + g, cfg, g);
    // Keep the run "alive" so STALLED stays out of the picture.
    state.stalled.lastActivityAt = T0 + t;
    for (const e of checkTimers(state, T0 + t, cfg)) {
      if (e.type !== "GPU_UNDERUTILIZED") continue;
      events.push(e);
      at.push(t / 60);
    }
  }
  return { at, events };
}

Deno.test("GPU_UNDERUTILIZED: behaviour by utilisation pattern (table)", () => {
  const cases: { name: string; util: (t: number) => number; minutes: number; want: number[] }[] = [
    {
      name: "idle GPUs fire once the warm-up (3 min) and a full window (5 min) are behind",
      util: () => 5,
      minutes: 20,
      want: [8],
    },
    {
      name: "busy GPUs never fire",
      util: () => 95,
      minutes: 60,
      want: [],
    },
    {
      name: "an idle warm-up does not count against the run",
      util: (t) => (t < 180 ? 0 : 90),
      minutes: 30,
      want: [],
    },
    {
      name: "an average of exactly 20% does not fire",
      util: () => 20,
      minutes: 20,
      want: [],
    },
    {
      name: "bursty use averaging above 20% does not fire",
      util: (t) => (t % 60 < 20 ? 90 : 0),
      minutes: 30,
      want: [],
    },
    {
      name: "a lasting idle stretch fires at most once per 30 minutes",
      util: () => 3,
      minutes: 75,
      want: [8, 38, 68],
    },
    {
      // At 24 min the window holds 6 busy samples of 31: 6 × 100% / 31 = 19.4%.
      name: "a run that turns idle fires when the 5-minute average falls below 20%",
      util: (t) => (t < 1200 ? 100 : 0),
      minutes: 40,
      want: [24],
    },
  ];
  for (const { name, util, minutes, want } of cases) {
    assert.deepEqual(simulate(util, minutes).at, want, name);
  }
});

Deno.test("GPU_UNDERUTILIZED: the message quotes the GPUs, the average and the threshold", () => {
  const { events } = simulate(() => 4, 10, 2);
  assert.equal(events.length, 1);
  assert.equal(events[0].severity, "warning");
  assert.match(
    events[0].message,
    /^GPUs 0, 1 averaged 4\.5% utilisation over the last 5 minutes \(below 20%\)/,
  );
  assert.deepEqual(events[0].data.gpus, [0, 1]);
});

Deno.test("GPU_UNDERUTILIZED: no judgement on a window with too few samples", () => {
  const state = createRunRuleState({ startedAtS: T0 });
  observeGpuUtil(state, T0 + 590, 0);
  observeGpuUtil(state, T0 + 600, 0);
  assert.deepEqual(checkTimers(state, T0 + 600).filter((e) => e.type === "GPU_UNDERUTILIZED"), []);
});

Deno.test("GPU_UNDERUTILIZED: sys/gpu{i}/util points feed the rule, and do not count as activity", () => {
  const state = createRunRuleState({ startedAtS: T0 });
  const points = [];
  for (let t = 0; t <= 600; t += 10) {
    points.push({ key: "sys/gpu0/util", step: t, value: 2, wall_time: T0 + t });
    points.push({ key: "sys/gpu1/util", step: t, value: 4, wall_time: T0 + t });
  }
  observePoints(state, points);
  // Replaying the same samples replaces them rather than doubling them.
  observePoints(state, points);
  assert.equal(state.gpu.samples.length, 2 * 31);
  assert.equal(state.stalled.lastActivityAt, null);
  const events = checkTimers(state, T0 + 600).filter((e) => e.type === "GPU_UNDERUTILIZED");
  assert.equal(events.length, 1);
  assert.equal(events[0].data.avg_util_pct, 3);
});

Deno.test("GPU_UNDERUTILIZED: without a start time the first sample starts the warm-up", () => {
  const state = createRunRuleState();
  for (let t = 0; t <= 470; t += 10) observeGpuUtil(state, T0 + t, 0);
  assert.deepEqual(checkTimers(state, T0 + 470).filter((e) => e.type === "GPU_UNDERUTILIZED"), []);
  observeGpuUtil(state, T0 + 480, 0);
  assert.equal(
    checkTimers(state, T0 + 480).filter((e) => e.type === "GPU_UNDERUTILIZED").length,
    1,
  );
});

Deno.test("GPU_UNDERUTILIZED: thresholds come from the config, and samples stay bounded", () => {
  const cfg = resolveRulesConfig({
    gpuUnderutilizedPct: 50,
    gpuUnderutilizedWarmupS: 0,
    gpuUnderutilizedWindowS: 60,
    gpuUnderutilizedCooldownS: 600,
  });
  assert.deepEqual(simulate(() => 40, 25, 1, cfg).at, [1, 11, 21]);
  const state = createRunRuleState({ startedAtS: T0 });
  for (let t = 0; t <= 3600; t += 10) observeGpuUtil(state, T0 + t, 50, cfg);
  assert.ok(state.gpu.samples.length <= 7, `${state.gpu.samples.length} samples kept`);
});
