/**
 * Waiting over REST: `GET /api/runs/{id}/wait`, `/api/jobs/{id}/wait` and
 * `/api/sweeps/{id}/wait` take this query and answer a `WaitResult` — the same answer MCP's
 * `wait_for_run` gives.
 */
import { z } from "zod";
import type { EventRecord } from "./objects.ts";

/** The longest wait one call may ask for, in seconds. */
export const MAX_WAIT_S = 600;
/** The wait when a call names none, in seconds. */
export const DEFAULT_WAIT_S = 300;

/** The query of a `…/wait` request. */
export const waitQuery = z.object({
  until: z.string().max(64).optional().describe(
    '"finished" (default), "step>=N", or an event type such as CHECKPOINT_CREATED; ignored for a sweep',
  ),
  timeout_s: z.coerce.number().min(1).max(MAX_WAIT_S).optional().describe(
    `seconds to wait at most (default ${DEFAULT_WAIT_S})`,
  ),
  after_event_id: z.coerce.number().int().min(0).optional().describe(
    "only events after this id wake the wait (default: those raised after the request)",
  ),
});
export type WaitQuery = z.infer<typeof waitQuery>;

/** Why a wait ended. */
export type WakeReason = "finished" | "step" | "event" | "anomaly" | "timeout" | "cancelled";

/** What a wait answers. */
export interface WaitResult {
  reason: WakeReason;
  until: string;
  run_id: string | null;
  job_id: string | null;
  status: string | null;
  step: number | null;
  /** The event that woke it. */
  event: EventRecord | null;
  /** Pass as `after_event_id` to wait on from here. */
  last_event_id: number;
  waited_s: number;
  /** The run's diagnosis (see `GET /api/runs/{id}/diagnosis`). */
  diagnosis: { summary: string } | null;
  /** What to do next: an MCP tool (or its REST and CLI twin), its arguments, and why. */
  next_actions: { tool: string; args: Record<string, unknown>; why: string }[];
  /** With a sweep: the sweep now. */
  sweep?: { id: string; status: string };
  /** One sentence saying all of it. */
  summary: string;
}
