/**
 * `stop_on`: a job asks to be cancelled when an anomaly is raised on its run, so a diverged
 * run stops burning its GPUs. The decision is pure; `RulesEngine` applies it through the
 * ordinary cancel (the agent stops the process group).
 */
import type { EventRecord } from "../../protocol/objects.ts";

/** What the decision needs of a job. */
export interface StoppableJob {
  id: string;
  status: string;
  stop_on: readonly string[];
  run_id: string | null;
  cancel_requested: boolean;
}

const STOPPABLE = new Set(["DISPATCHED", "RUNNING"]);

/**
 * The cancel reason when `event` stops `job` (`stopped by LOSS_NAN at step 1234: …`), or null:
 * the job did not ask for this type, is not running, is already being cancelled, or the
 * event is about an older attempt's run.
 */
export function stopOnReason(job: StoppableJob, event: EventRecord): string | null {
  if (!job.stop_on.includes(event.type)) return null;
  if (!STOPPABLE.has(job.status) || job.cancel_requested) return null;
  if (event.run_id !== null && event.run_id !== job.run_id) return null;
  const step = (event.data as { step?: unknown }).step;
  const at = typeof step === "number" ? ` at step ${step}` : "";
  return `stopped by ${event.type}${at}: ${event.message}`;
}
