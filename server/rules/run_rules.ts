/**
 * Everything the rules remember of one run, fed with points, GPU samples and activity, and
 * checked on a timer; rebuilt from stored points after a restart without raising again.
 */
import { atOrBefore, type StepValue } from "./_step_window.ts";
import {
  checkGpuUnderutilized,
  createGpuUtilState,
  type GpuUtilState,
  recordGpuUtil,
} from "./gpu_underutilized.ts";
import { isLossKey, lossFamily } from "./loss_families.ts";
import { createLossNanState, detectLossNan, type LossNanState } from "./loss_nan.ts";
import { createLossSpikeSeries, detectLossSpike, type LossSpikeSeries } from "./loss_spike.ts";
import {
  createOverfittingState,
  detectOverfitting,
  observeEvalLoss,
  observeTrainLoss,
  type OverfittingState,
} from "./overfitting.ts";
import { DEFAULT_RULES_CONFIG, type ResolvedRulesConfig } from "./rules_config.ts";
import type { MetricPoint, RuleEvent } from "./rule_event.ts";
import { checkStalled, createStalledState, recordActivity, type StalledState } from "./stalled.ts";

/** System metric keys of GPU utilisation, as the agent writes them: `sys/gpu{i}/util`. */
const GPU_UTIL_KEY = /^sys\/gpu(\d+)\/util$/;

/**
 * Everything the rules remember about one run. Bounded: per key a window of recent steps, a
 * few evaluations, the GPU samples of one averaging window, and some flags.
 */
export interface RunRuleState {
  nan: LossNanState;
  spikes: Map<string, LossSpikeSeries>;
  overfitting: OverfittingState;
  gpu: GpuUtilState;
  stalled: StalledState;
}

/** Options of a new run state. */
export interface RunRuleStateOptions {
  /** Unix seconds the run started: starts the GPU warm-up and the STALLED clock. */
  startedAtS?: number | null;
}

/** A fresh rules state for one run. */
export function createRunRuleState(opts: RunRuleStateOptions = {}): RunRuleState {
  const startedAt = opts.startedAtS ?? null;
  return {
    nan: createLossNanState(),
    spikes: new Map(),
    overfitting: createOverfittingState(),
    gpu: createGpuUtilState(startedAt),
    stalled: createStalledState(startedAt),
  };
}

/**
 * Feeds a batch of stored metric points and returns the events they raise (LOSS_NAN,
 * LOSS_SPIKE, OVERFITTING_SUSPECTED). Points are taken in step order (stably, so the later of
 * two writes to one step wins, as in the store). `sys/gpu{i}/util` points feed the GPU rule;
 * every other point counts as activity at its `wall_time`. Feeding points already fed changes
 * nothing and raises nothing.
 */
export function observePoints(
  state: RunRuleState,
  points: readonly MetricPoint[],
  cfg: ResolvedRulesConfig = DEFAULT_RULES_CONFIG,
): RuleEvent[] {
  const events: RuleEvent[] = [];
  const ordered = points.map((p, i) => ({ p, i }))
    .sort((a, b) => a.p.step - b.p.step || a.i - b.i)
    .map(({ p }) => p);
  let pending = false;
  for (let i = 0; i < ordered.length; i++) {
    const { key, step, value, wall_time } = ordered[i];
    const gpu = GPU_UTIL_KEY.exec(key);
    if (gpu) {
      recordGpuUtil(state.gpu, wall_time, value, Number(gpu[1]), cfg);
    } else {
      if (!key.startsWith("sys/")) recordActivity(state.stalled, wall_time);
      if (isLossKey(key)) pending = observeLoss(state, key, step, value, cfg, events) || pending;
    }
    // Overfitting is judged once every point of a step is in, so the eval point and the train
    // point of one step are seen together whatever their order, and a replay of a whole run
    // in one batch judges it step by step as live feeding did.
    if (pending && (i === ordered.length - 1 || ordered[i + 1].step !== step)) {
      events.push(...detectOverfitting(state.overfitting, cfg));
      pending = false;
    }
  }
  return events;
}

/** Feeds one loss point to the loss rules; true when it may change the overfitting verdict. */
function observeLoss(
  state: RunRuleState,
  key: string,
  step: number,
  value: number,
  cfg: ResolvedRulesConfig,
  events: RuleEvent[],
): boolean {
  if (!Number.isFinite(value)) {
    const event = detectLossNan(state.nan, key, step, value);
    if (event) events.push(event);
    return false;
  }
  let series = state.spikes.get(key);
  if (!series) {
    series = createLossSpikeSeries(cfg);
    state.spikes.set(key, series);
  }
  const spike = detectLossSpike(series, key, step, value, cfg);
  if (spike) events.push(spike);
  const family = lossFamily(key);
  if (family === "train") {
    observeTrainLoss(state.overfitting, key, step, value);
    return state.overfitting.series.size > 0;
  }
  if (family === "eval") {
    observeEvalLoss(state.overfitting, key, step, value, (s) => trainAt(state, s), cfg);
    return true;
  }
  return false;
}

/** The train-loss points known at or before `step`, one per train key. */
function trainAt(state: RunRuleState, step: number): Map<string, StepValue> {
  const found = new Map<string, StepValue>();
  for (const [key, series] of state.spikes) {
    if (lossFamily(key) !== "train") continue;
    const point = atOrBefore(series.window, step);
    if (point) found.set(key, { ...point });
  }
  return found;
}

/** Records the utilisation (percent) of GPU `gpuIndex` at `tsS` (Unix seconds). */
export function observeGpuUtil(
  state: RunRuleState,
  tsS: number,
  utilPct: number,
  cfg: ResolvedRulesConfig = DEFAULT_RULES_CONFIG,
  gpuIndex = 0,
): void {
  recordGpuUtil(state.gpu, tsS, utilPct, gpuIndex, cfg);
}

/** Records that the run produced something (a log line, a point) at `tsS` (Unix seconds). */
export function observeActivity(state: RunRuleState, tsS: number): void {
  recordActivity(state.stalled, tsS);
}

/**
 * The time-driven rules, STALLED and GPU_UNDERUTILIZED, at `nowS` (Unix seconds). Call it
 * periodically for running runs only. With no start time and no activity yet, the first call
 * starts the STALLED clock.
 */
export function checkTimers(
  state: RunRuleState,
  nowS: number,
  cfg: ResolvedRulesConfig = DEFAULT_RULES_CONFIG,
): RuleEvent[] {
  if (state.stalled.startedAt === null && state.stalled.lastActivityAt === null) {
    state.stalled.startedAt = nowS;
  }
  const events: RuleEvent[] = [];
  const stalled = checkStalled(state.stalled, nowS, cfg);
  if (stalled) events.push(stalled);
  const gpu = checkGpuUnderutilized(state.gpu, nowS, cfg);
  if (gpu) events.push(gpu);
  return events;
}

/**
 * Rebuilds a run's state from its stored points after a server restart. The events this
 * replay raises were raised (and stored) before the restart, so they are dropped.
 */
export function rebuildRunRuleState(
  points: readonly MetricPoint[],
  opts: RunRuleStateOptions = {},
  cfg: ResolvedRulesConfig = DEFAULT_RULES_CONFIG,
): RunRuleState {
  const state = createRunRuleState(opts);
  observePoints(state, points, cfg);
  return state;
}
