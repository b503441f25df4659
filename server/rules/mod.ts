/**
 * Event rules: deterministic, debounced anomaly detection over rolling windows of one run's
 * metric points, GPU utilisation and activity. Pure functions over plain data; the caller
 * stores the events and attaches run, job and node ids.
 *
 * @module
 */

export type { MetricPoint, RuleEvent, RuleEventType, Severity } from "./rule_event.ts";
export {
  /** The defaults of every threshold, as one resolved object. */
  DEFAULT_RULES_CONFIG,
  /** GPU_UNDERUTILIZED: seconds between two events of one run. */
  GPU_UNDERUTILIZED_COOLDOWN_S,
  /** GPU_UNDERUTILIZED: utilisation percent below which GPUs count as underused. */
  GPU_UNDERUTILIZED_PCT,
  /** GPU_UNDERUTILIZED: seconds after the start that are not judged. */
  GPU_UNDERUTILIZED_WARMUP_S,
  /** GPU_UNDERUTILIZED: seconds of samples averaged. */
  GPU_UNDERUTILIZED_WINDOW_S,
  /** LOSS_SPIKE: steps between two events of one key. */
  LOSS_SPIKE_COOLDOWN_STEPS,
  /** LOSS_SPIKE: how many median absolute deviations above the median a spike lies. */
  LOSS_SPIKE_MAD_FACTOR,
  /** LOSS_SPIKE: points needed before a spike can be called. */
  LOSS_SPIKE_MIN_POINTS,
  /** LOSS_SPIKE: the fraction of the median a spike must exceed it by. */
  LOSS_SPIKE_MIN_RISE,
  /** LOSS_SPIKE: points of history the baseline is taken over. */
  LOSS_SPIKE_WINDOW,
  /** OVERFITTING_SUSPECTED: the rise above the running minimum that counts (fraction). */
  OVERFITTING_MIN_RISE,
  /** OVERFITTING_SUSPECTED: risen evaluations needed among the last window. */
  OVERFITTING_MIN_RISEN,
  /** OVERFITTING_SUSPECTED: the number of last evaluations looked at. */
  OVERFITTING_WINDOW,
  /** Fills in and validates a partial rules config; errors name the field. */
  resolveRulesConfig,
  /** STALLED: seconds of silence before a running job is stalled. */
  STALLED_AFTER_S,
} from "./rules_config.ts";
export type { ResolvedRulesConfig, RulesConfig } from "./rules_config.ts";
export {
  /** Whether a key names a loss (contains "loss"): the NaN and spike rules watch it. */
  isLossKey,
  /** The train and eval loss keys the overfitting rule pairs. */
  LOSS_FAMILIES,
  /** `"train"`, `"eval"` or `null` for a metric key. */
  lossFamily,
} from "./loss_families.ts";
export type { LossFamily } from "./loss_families.ts";
export {
  /** Runs the time-driven rules (STALLED, GPU_UNDERUTILIZED) at a given time. */
  checkTimers,
  /** A fresh rules state for one run. */
  createRunRuleState,
  /** Records that a run produced a log line or point at a given time. */
  observeActivity,
  /** Records one GPU utilisation sample. */
  observeGpuUtil,
  /** Feeds stored metric points and returns the events they raise. */
  observePoints,
  /** Rebuilds a run's state from its stored points, dropping the replayed events. */
  rebuildRunRuleState,
} from "./run_rules.ts";
export type { RunRuleState, RunRuleStateOptions } from "./run_rules.ts";
