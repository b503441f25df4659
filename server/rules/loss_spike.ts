/**
 * LOSS_SPIKE: a loss value far above the median of the previous ones (by a multiple of their
 * median absolute deviation and a minimum rise), judged at the newest step only.
 */
import { fmtValue } from "./_format.ts";
import {
  createStepWindow,
  lastStep,
  median,
  type StepWindow,
  upsertStep,
  valuesBefore,
} from "./_step_window.ts";
import type { ResolvedRulesConfig } from "./rules_config.ts";
import type { RuleEvent } from "./rule_event.ts";

/** One loss key's recent finite values and the step of its last LOSS_SPIKE. */
export interface LossSpikeSeries {
  window: StepWindow;
  lastFiredStep: number | null;
}

/** A fresh series holding the last `cfg.lossSpikeWindow` steps. */
export function createLossSpikeSeries(cfg: ResolvedRulesConfig): LossSpikeSeries {
  return { window: createStepWindow(cfg.lossSpikeWindow), lastFiredStep: null };
}

/**
 * Records one finite loss value and returns LOSS_SPIKE when it exceeds the median of the
 * previous points by more than `lossSpikeMadFactor` × their median absolute deviation and by
 * more than `lossSpikeMinRise` of the median, once `lossSpikeMinPoints` points precede it.
 * Only the newest step is judged: a late point for an older step joins the baseline without
 * being judged, and a rewrite of the newest step is judged against the points before it.
 */
export function detectLossSpike(
  series: LossSpikeSeries,
  key: string,
  step: number,
  value: number,
  cfg: ResolvedRulesConfig,
): RuleEvent | null {
  const isNewest = step >= lastStep(series.window);
  const previous = isNewest ? valuesBefore(series.window, step) : [];
  upsertStep(series.window, step, value);
  if (previous.length < cfg.lossSpikeMinPoints) return null;
  if (series.lastFiredStep !== null && step - series.lastFiredStep < cfg.lossSpikeCooldownSteps) {
    return null;
  }
  const med = median(previous);
  const excess = value - med;
  // The test without the deviation first: most points lie near the median and stop here,
  // before the second sort.
  if (excess <= cfg.lossSpikeMinRise * Math.abs(med)) return null;
  const mad = median(previous.map((v) => Math.abs(v - med)));
  if (excess <= cfg.lossSpikeMadFactor * mad) return null;
  series.lastFiredStep = step;
  return {
    type: "LOSS_SPIKE",
    severity: "warning",
    message: `Loss "${key}" spiked to ${fmtValue(value)} at step ${step}: the median of the ` +
      `previous ${previous.length} points is ${fmtValue(med)} (median absolute deviation ` +
      `${fmtValue(mad)})`,
    data: {
      key,
      step,
      value,
      median: med,
      mad,
      window: previous.length,
      ratio: med === 0 ? null : value / med,
    },
  };
}
