/**
 * GPU_UNDERUTILIZED: a run's GPUs averaged below a threshold over a well-covered window, after
 * a warm-up, at most once per cooldown.
 */
import { fmtMinutes } from "./_format.ts";
import type { ResolvedRulesConfig } from "./rules_config.ts";
import type { RuleEvent } from "./rule_event.ts";

/** One utilisation sample of one GPU. */
export interface GpuSample {
  ts: number;
  gpu: number;
  util: number;
}

/** The utilisation samples of one run's GPUs within the averaging window. */
export interface GpuUtilState {
  /** Sorted by `ts`, then `gpu`; older than the window are pruned. */
  samples: GpuSample[];
  /** The run's start (Unix seconds); the first sample when the caller gave none. */
  startedAt: number | null;
  lastFiredAt: number | null;
}

// The window must be this well covered by samples (the agent reports every 10 s) so that a
// run whose telemetry just began, or paused, is not judged on a handful of samples.
const MIN_COVERAGE = 0.8;

/** A fresh GPU_UNDERUTILIZED state; `startedAt` (Unix seconds) starts the warm-up. */
export function createGpuUtilState(startedAt: number | null = null): GpuUtilState {
  return { samples: [], startedAt, lastFiredAt: null };
}

/**
 * Records the utilisation (percent) of GPU `gpu` at `ts`. A repeated `(ts, gpu)` replaces the
 * earlier sample; samples older than the window behind the newest one are dropped.
 */
export function recordGpuUtil(
  state: GpuUtilState,
  ts: number,
  util: number,
  gpu: number,
  cfg: ResolvedRulesConfig,
): void {
  if (!Number.isFinite(ts) || !Number.isFinite(util)) return;
  if (state.startedAt === null) state.startedAt = ts;
  const samples = state.samples;
  const newest = samples.length === 0 ? ts : Math.max(ts, samples[samples.length - 1].ts);
  if (ts < newest - cfg.gpuUnderutilizedWindowS) return;
  let i = samples.length;
  while (
    i > 0 && (samples[i - 1].ts > ts || (samples[i - 1].ts === ts && samples[i - 1].gpu > gpu))
  ) {
    i--;
  }
  if (i > 0 && samples[i - 1].ts === ts && samples[i - 1].gpu === gpu) {
    samples[i - 1] = { ts, gpu, util };
  } else {
    samples.splice(i, 0, { ts, gpu, util });
  }
  const cutoff = newest - cfg.gpuUnderutilizedWindowS;
  let drop = 0;
  while (drop < samples.length && samples[drop].ts < cutoff) drop++;
  if (drop > 0) samples.splice(0, drop);
}

/**
 * GPU_UNDERUTILIZED when the samples of the last `gpuUnderutilizedWindowS` seconds, all taken
 * after the `gpuUnderutilizedWarmupS` warm-up, average below `gpuUnderutilizedPct`; at most
 * once per `gpuUnderutilizedCooldownS`. Every GPU's samples weigh the same.
 */
export function checkGpuUnderutilized(
  state: GpuUtilState,
  now: number,
  cfg: ResolvedRulesConfig,
): RuleEvent | null {
  if (state.startedAt === null) return null;
  const windowS = cfg.gpuUnderutilizedWindowS;
  const from = now - windowS;
  if (from < state.startedAt + cfg.gpuUnderutilizedWarmupS) return null;
  if (state.lastFiredAt !== null && now - state.lastFiredAt < cfg.gpuUnderutilizedCooldownS) {
    return null;
  }
  const inWindow = state.samples.filter((s) => s.ts >= from && s.ts <= now);
  if (inWindow.length < 2) return null;
  if (inWindow[inWindow.length - 1].ts - inWindow[0].ts < MIN_COVERAGE * windowS) return null;
  const avg = inWindow.reduce((sum, s) => sum + s.util, 0) / inWindow.length;
  if (avg >= cfg.gpuUnderutilizedPct) return null;
  state.lastFiredAt = now;
  const gpus = [...new Set(inWindow.map((s) => s.gpu))].sort((a, b) => a - b);
  return {
    type: "GPU_UNDERUTILIZED",
    severity: "warning",
    message: `GPU${gpus.length === 1 ? "" : "s"} ${gpus.join(", ")} averaged ` +
      `${avg.toFixed(1)}% utilisation over the last ${fmtMinutes(windowS)} minutes ` +
      `(below ${cfg.gpuUnderutilizedPct}%): the job holds GPUs it barely uses; check the data ` +
      `loader (num_workers), the batch size, or whether the code runs on the CPU`,
    data: {
      avg_util_pct: avg,
      threshold_pct: cfg.gpuUnderutilizedPct,
      window_s: windowS,
      gpus,
      samples: inWindow.length,
    },
  };
}
