/** Points of history the loss-spike baseline (median and MAD) is taken over. */
export const LOSS_SPIKE_WINDOW = 50;
/** A spike exceeds the baseline median by more than this many median absolute deviations. */
export const LOSS_SPIKE_MAD_FACTOR = 10;
/** ...and by more than this fraction of the median (0.5 = 50 %). */
export const LOSS_SPIKE_MIN_RISE = 0.5;
/** Points a key needs before its next point can be called a spike. */
export const LOSS_SPIKE_MIN_POINTS = 20;
/** Steps between two LOSS_SPIKE events of one key. */
export const LOSS_SPIKE_COOLDOWN_STEPS = 200;
/** An evaluation counts as risen when it is this fraction above the running minimum (0.05 = 5 %). */
export const OVERFITTING_MIN_RISE = 0.05;
/** Evaluations looked at by the overfitting rule (the last N). */
export const OVERFITTING_WINDOW = 3;
/** Risen evaluations among the last `OVERFITTING_WINDOW` needed to suspect overfitting. */
export const OVERFITTING_MIN_RISEN = 2;
/** GPU utilisation (percent) below which a run's GPUs count as underutilised. */
export const GPU_UNDERUTILIZED_PCT = 20;
/** Seconds of utilisation samples averaged by the underutilisation rule. */
export const GPU_UNDERUTILIZED_WINDOW_S = 300;
/** Seconds after a run starts during which utilisation is not judged (data loading, compile). */
export const GPU_UNDERUTILIZED_WARMUP_S = 180;
/** Seconds between two GPU_UNDERUTILIZED events of one run. */
export const GPU_UNDERUTILIZED_COOLDOWN_S = 1800;
/** Seconds without a metric or log line after which a running job is STALLED. */
export const STALLED_AFTER_S = 900;

/** Thresholds of the event rules; every field is optional (the `server.yaml` `rules:` section). */
export interface RulesConfig {
  /** @default 50 (`LOSS_SPIKE_WINDOW`) */
  lossSpikeWindow?: number;
  /** @default 10 (`LOSS_SPIKE_MAD_FACTOR`) */
  lossSpikeMadFactor?: number;
  /** @default 0.5 (`LOSS_SPIKE_MIN_RISE`) */
  lossSpikeMinRise?: number;
  /** @default 20 (`LOSS_SPIKE_MIN_POINTS`) */
  lossSpikeMinPoints?: number;
  /** @default 200 (`LOSS_SPIKE_COOLDOWN_STEPS`) */
  lossSpikeCooldownSteps?: number;
  /** @default 0.05 (`OVERFITTING_MIN_RISE`) */
  overfittingMinRise?: number;
  /** @default 3 (`OVERFITTING_WINDOW`) */
  overfittingWindow?: number;
  /** @default 2 (`OVERFITTING_MIN_RISEN`) */
  overfittingMinRisen?: number;
  /** @default 20 (`GPU_UNDERUTILIZED_PCT`) */
  gpuUnderutilizedPct?: number;
  /** @default 300 (`GPU_UNDERUTILIZED_WINDOW_S`) */
  gpuUnderutilizedWindowS?: number;
  /** @default 180 (`GPU_UNDERUTILIZED_WARMUP_S`) */
  gpuUnderutilizedWarmupS?: number;
  /** @default 1800 (`GPU_UNDERUTILIZED_COOLDOWN_S`) */
  gpuUnderutilizedCooldownS?: number;
  /** @default 900 (`STALLED_AFTER_S`) */
  stalledAfterS?: number;
}

/** Rules thresholds with every field filled in. */
export type ResolvedRulesConfig = Readonly<Required<RulesConfig>>;

/** The defaults, as one resolved object. */
export const DEFAULT_RULES_CONFIG: ResolvedRulesConfig = Object.freeze({
  lossSpikeWindow: LOSS_SPIKE_WINDOW,
  lossSpikeMadFactor: LOSS_SPIKE_MAD_FACTOR,
  lossSpikeMinRise: LOSS_SPIKE_MIN_RISE,
  lossSpikeMinPoints: LOSS_SPIKE_MIN_POINTS,
  lossSpikeCooldownSteps: LOSS_SPIKE_COOLDOWN_STEPS,
  overfittingMinRise: OVERFITTING_MIN_RISE,
  overfittingWindow: OVERFITTING_WINDOW,
  overfittingMinRisen: OVERFITTING_MIN_RISEN,
  gpuUnderutilizedPct: GPU_UNDERUTILIZED_PCT,
  gpuUnderutilizedWindowS: GPU_UNDERUTILIZED_WINDOW_S,
  gpuUnderutilizedWarmupS: GPU_UNDERUTILIZED_WARMUP_S,
  gpuUnderutilizedCooldownS: GPU_UNDERUTILIZED_COOLDOWN_S,
  stalledAfterS: STALLED_AFTER_S,
});

type Field = keyof RulesConfig;

// Window sizes and counts are integers ≥ 1; the rest are non-negative numbers.
const INTEGER_FIELDS: ReadonlySet<Field> = new Set<Field>([
  "lossSpikeWindow",
  "lossSpikeMinPoints",
  "overfittingWindow",
  "overfittingMinRisen",
]);

/** Fills the defaults into `partial` and validates it; the error names the offending field. */
export function resolveRulesConfig(partial: RulesConfig = {}): ResolvedRulesConfig {
  const resolved: Record<string, number> = { ...DEFAULT_RULES_CONFIG };
  for (const field of Object.keys(DEFAULT_RULES_CONFIG) as Field[]) {
    const value = partial[field];
    if (value === undefined) continue;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0) {
      throw new Error(
        `Invalid rules config "${field}": expected a non-negative number, got ${quote(value)}`,
      );
    }
    if (INTEGER_FIELDS.has(field) && (!Number.isInteger(value) || value < 1)) {
      throw new Error(
        `Invalid rules config "${field}": expected an integer of at least 1, got ${value}`,
      );
    }
    resolved[field] = value;
  }
  const cfg = resolved as unknown as ResolvedRulesConfig;
  if (cfg.lossSpikeMinPoints > cfg.lossSpikeWindow) {
    throw new Error(
      `Invalid rules config "lossSpikeMinPoints": ${cfg.lossSpikeMinPoints} exceeds ` +
        `lossSpikeWindow ${cfg.lossSpikeWindow}: the window could never hold enough points`,
    );
  }
  if (cfg.overfittingMinRisen > cfg.overfittingWindow) {
    throw new Error(
      `Invalid rules config "overfittingMinRisen": ${cfg.overfittingMinRisen} exceeds ` +
        `overfittingWindow ${cfg.overfittingWindow}: the rule could never fire`,
    );
  }
  return Object.freeze(cfg);
}

function quote(value: unknown): string {
  return typeof value === "string" ? JSON.stringify(value) : String(value);
}
