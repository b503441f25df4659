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

/**
 * The x of one point in a mode: its step; seconds since `t0` (the run's first wall time, kept
 * by the caller so a zoomed read of a later range keeps the same origin); or milliseconds.
 */
export function xAt(step: number, wall: number, mode: XMode, t0: number): number {
  if (mode === "step") return step;
  if (mode === "wall") return wall * 1000;
  return wall - t0;
}

/**
 * What `POST /api/runs/metrics:query` is asked to read an x range drawn in `mode`: steps as
 * they are (whole steps covering the range), wall-clock milliseconds as Unix seconds, and
 * seconds since `t0` back to wall time.
 */
export function queryRange(
  mode: XMode,
  range: readonly [number, number],
  t0: number,
): { x: "step" | "wall"; range: [number, number] } {
  const [from, to] = range[0] <= range[1] ? range : [range[1], range[0]];
  if (mode === "step") return { x: "step", range: [Math.floor(from), Math.ceil(to)] };
  if (mode === "wall") return { x: "wall", range: [from / 1000, to / 1000] };
  return { x: "wall", range: [t0 + from, t0 + to] };
}

/** A wall-clock tick or readout (milliseconds since the epoch) as local `HH:MM:SS`. */
export function formatClock(ms: number): string {
  if (!Number.isFinite(ms)) return "";
  const d = new Date(ms);
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
