/**
 * OVERFITTING_SUSPECTED: an eval loss risen above its running minimum in most of its recent
 * evaluations while a train loss kept falling; once per key until a new minimum.
 */
import { fmtPct, fmtValue } from "./_format.ts";
import type { StepValue } from "./_step_window.ts";
import { trainKeyRank } from "./loss_families.ts";
import type { ResolvedRulesConfig } from "./rules_config.ts";
import type { RuleEvent } from "./rule_event.ts";

/**
 * One evaluation, with the train loss at its step: for each train key, the point with the
 * highest step ≤ the evaluation's step seen so far. Keeping these snapshots instead of the
 * train history keeps memory bounded when train loss is logged every step.
 */
export interface EvalPoint {
  step: number;
  value: number;
  train: Map<string, StepValue>;
}

/** One eval-loss key: its last few evaluations, its running minimum and the debounce flag. */
export interface EvalSeries {
  /** The last `overfittingWindow` evaluations, sorted by step. */
  recent: EvalPoint[];
  min: EvalPoint | null;
  /** False after OVERFITTING_SUSPECTED fired; a new minimum re-arms it. */
  armed: boolean;
}

/** Every eval-loss key of one run. */
export interface OverfittingState {
  series: Map<string, EvalSeries>;
}

/** A fresh OVERFITTING_SUSPECTED state. */
export function createOverfittingState(): OverfittingState {
  return { series: new Map() };
}

function copyPoint(p: EvalPoint): EvalPoint {
  return { step: p.step, value: p.value, train: new Map(p.train) };
}

/**
 * Records one finite eval-loss value. `trainAt(step)` gives the train-loss points known at or
 * before `step`, one per train key.
 */
export function observeEvalLoss(
  state: OverfittingState,
  key: string,
  step: number,
  value: number,
  trainAt: (step: number) => Map<string, StepValue>,
  cfg: ResolvedRulesConfig,
): void {
  let series = state.series.get(key);
  if (!series) {
    series = { recent: [], min: null, armed: true };
    state.series.set(key, series);
  }
  const recent = series.recent;
  const at = recent.findIndex((p) => p.step >= step);
  if (at !== -1 && recent[at].step === step) {
    recent[at] = { step, value, train: recent[at].train };
  } else if (!(at === 0 && recent.length >= cfg.overfittingWindow)) {
    recent.splice(at === -1 ? recent.length : at, 0, { step, value, train: trainAt(step) });
    if (recent.length > cfg.overfittingWindow) recent.shift();
  }
  updateMinimum(series, step, value, trainAt);
}

function updateMinimum(
  series: EvalSeries,
  step: number,
  value: number,
  trainAt: (step: number) => Map<string, StepValue>,
): void {
  const min = series.min;
  if (min === null || value < min.value) {
    series.min = { step, value, train: trainAt(step) };
    series.armed = true;
  } else if (value === min.value && step < min.step) {
    // A tie found out of order: the earliest step is the minimum, as in-order feeding gives.
    series.min = { step, value, train: trainAt(step) };
  } else if (step === min.step && value > min.value) {
    // The minimum's own step was rewritten upwards: fall back to the lowest point still held.
    min.value = value;
    let best = min;
    for (const p of series.recent) if (p.value < best.value) best = p;
    if (best !== min) series.min = copyPoint(best);
  }
}

/** Refreshes the train-loss snapshots of every held evaluation with one train-loss point. */
export function observeTrainLoss(
  state: OverfittingState,
  trainKey: string,
  step: number,
  value: number,
): void {
  for (const series of state.series.values()) {
    const points = series.min ? [...series.recent, series.min] : series.recent;
    for (const p of points) {
      if (step > p.step) continue;
      const known = p.train.get(trainKey);
      if (!known || step >= known.step) p.train.set(trainKey, { step, value });
    }
  }
}

/**
 * OVERFITTING_SUSPECTED for each armed eval key whose loss rose at least
 * `overfittingMinRise` above its running minimum in `overfittingMinRisen` of its last
 * `overfittingWindow` evaluations while a train loss fell between the minimum and the latest
 * evaluation. Fires once per key until the eval loss makes a new minimum.
 */
export function detectOverfitting(
  state: OverfittingState,
  cfg: ResolvedRulesConfig,
): RuleEvent[] {
  const events: RuleEvent[] = [];
  for (const [key, series] of state.series) {
    const event = judgeSeries(key, series, cfg);
    if (event) {
      series.armed = false;
      events.push(event);
    }
  }
  return events;
}

function judgeSeries(key: string, series: EvalSeries, cfg: ResolvedRulesConfig): RuleEvent | null {
  const min = series.min;
  if (!series.armed || min === null || min.value === 0) return null;
  const riseOf = (p: EvalPoint) => (p.value - min.value) / Math.abs(min.value);
  const risen = series.recent.filter((p) =>
    p.step > min.step && riseOf(p) >= cfg.overfittingMinRise
  );
  if (risen.length < cfg.overfittingMinRisen) return null;
  const latest = series.recent[series.recent.length - 1];
  const falling = fallingTrainLoss(min, latest);
  if (!falling) return null;
  const shown = risen[risen.length - 1];
  return {
    type: "OVERFITTING_SUSPECTED",
    severity: "warning",
    message: `Validation loss "${key}" rose ${fmtPct(riseOf(shown))} above its minimum ` +
      `${fmtValue(min.value)} (step ${min.step}) while train loss kept falling ` +
      `("${falling.key}" ${fmtValue(falling.from.value)} at step ${falling.from.step} → ` +
      `${fmtValue(falling.to.value)} at step ${falling.to.step})`,
    data: {
      key,
      step: latest.step,
      value: latest.value,
      min_value: min.value,
      min_step: min.step,
      rise: riseOf(shown),
      risen_steps: risen.map((p) => p.step),
      evaluations: series.recent.map((p) => ({ step: p.step, value: p.value })),
      train_key: falling.key,
      train_from: falling.from,
      train_to: falling.to,
    },
  };
}

function fallingTrainLoss(
  min: EvalPoint,
  latest: EvalPoint,
): { key: string; from: StepValue; to: StepValue } | null {
  const keys = [...latest.train.keys()]
    .filter((k) => min.train.has(k))
    .sort((a, b) => trainKeyRank(a) - trainKeyRank(b) || a.localeCompare(b));
  for (const key of keys) {
    const from = min.train.get(key)!;
    const to = latest.train.get(key)!;
    if (to.step > from.step && to.value < from.value) return { key, from, to };
  }
  return null;
}
