/** Small pieces of the tools' text summaries. */
import type { PrimaryMetric } from "../../protocol/objects.ts";
import { fmtNumber } from "../../lib/format.ts";

/** A number for a sentence, as gpuctl writes numbers (lib/format.ts). */
export const num = (v: unknown) => typeof v === "number" ? fmtNumber(v) : String(v);

/** `, train/loss 0.31 (best 0.29 at step 180)`, or nothing. */
export function metricText(m: PrimaryMetric | null): string {
  if (!m || m.latest === null) return "";
  const best = m.best !== null ? ` (best ${num(m.best)} at step ${m.best_step})` : "";
  return `, ${m.key} ${num(m.latest)}${best}`;
}

/** The semantic answer's own summary, then its next actions in words. */
export function withNextActions(
  summary: string,
  actions: { tool: string; args: Record<string, unknown> }[],
): string {
  if (!actions.length) return summary;
  const list = actions.map((a) => `${a.tool} ${JSON.stringify(a.args)}`).join("; ");
  return `${summary} Next: ${list}.`;
}

/**
 * The wait that follows a submission: on the job, woken by every event it raises from now on
 * (`after_event_id` taken before the job existed, so an early NaN is not missed).
 */
export function waitAction(jobId: string, afterEventId: number) {
  return {
    tool: "wait_for_run" as const,
    args: { job_id: jobId, after_event_id: afterEventId },
    why: "Wait for it to finish, woken early by any anomaly (never poll or sleep)",
  };
}
