/**
 * The chart's x axis: training step, time since the run's first point (so runs started at
 * different times on different machines line up), or wall-clock time. Pure.
 *
 * @module
 */

export type XMode = "step" | "relative" | "wall";

export const X_MODES: readonly XMode[] = ["step", "relative", "wall"];

/** A series as the API returns it: steps and wall times (Unix seconds) in columns. */
export interface XSeries {
  steps: readonly number[];
  wall_times: readonly number[];
}

/**
 * The x values of a series in a mode: steps; seconds since its first point; or wall time in
 * milliseconds since the epoch (what a time scale wants).
 */
export function xValues(s: XSeries, mode: XMode): number[] {
  if (mode === "step") return s.steps.slice();
  if (mode === "wall") return s.wall_times.map((t) => t * 1000);
  const t0 = s.wall_times.length ? Math.min(...s.wall_times) : 0;
  return s.wall_times.map((t) => t - t0);
}

/** `3725` seconds as `1h 02m 05s`, `65` as `1m 05s`, `9.5` as `9.5s`: a relative-time tick. */
export function formatRelative(seconds: number): string {
  if (!Number.isFinite(seconds)) return "";
  if (seconds < 60) return `${Number(seconds.toFixed(1))}s`;
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  const pad = (n: number) => String(n).padStart(2, "0");
  return h ? `${h}h ${pad(m)}m ${pad(r)}s` : `${m}m ${pad(r)}s`;
}
