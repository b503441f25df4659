/**
 * How the console writes numbers, times and statuses, on the server and in islands alike, so
 * a value that updates live reads the same as the one the server rendered (CONSOLE.md: "every
 * number has its context"). Numbers, durations, sizes and times are gpuctl's one way of writing
 * them (lib/format.ts, shared with the CLI, MCP and webhooks); the console's own parts follow.
 */

export {
  fmtAbsolute,
  fmtBytes,
  fmtDuration,
  fmtInt,
  fmtMb,
  fmtMetric,
  fmtRelative,
  secondsBetween,
} from "../lib/format.ts";
import type { MetricDirection } from "../protocol/vocabulary.ts";
import { fmtInt } from "../lib/format.ts";

/** `1,200 / 5,000` or just `1,200` without a known end. */
export function fmtProgress(step: number | null, max: number | null): string {
  return max ? `${fmtInt(step ?? 0)} / ${fmtInt(max)}` : fmtInt(step);
}

/** step / max_steps between 0 and 1, or null without a known end. */
export function progressFraction(step: number | null, max: number | null): number | null {
  if (!max || step === null) return null;
  return Math.max(0, Math.min(1, (step + 1) / max));
}

/** The status colour class of a job, run, node or evaluation status (CONSOLE.md's colours). */
export function statusTone(status: string): string {
  switch (status) {
    case "RUNNING":
    case "DISPATCHED":
      return "running";
    case "SUCCEEDED":
    case "COMPLETED":
    case "ONLINE":
      return "succeeded";
    case "FAILED":
    case "LOST":
    case "OFFLINE":
      return "failed";
    case "CANCELLED":
    case "STOPPED": // a sweep trial early stopping cancelled
      return "cancelled";
    case "IMPORTED":
      return "imported";
    default:
      return "queued";
  }
}

/** A run's own colour: a hash of its id, the same on every page. */
export function runColor(id: string): string {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  return `hsl(${(h >>> 0) % 360} 65% 48%)`;
}

/** ↓ better / ↑ better. */
export function directionArrow(direction: MetricDirection | null | undefined): string {
  return direction === "min" ? "↓" : direction === "max" ? "↑" : "";
}
