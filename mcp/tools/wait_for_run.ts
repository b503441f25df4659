/**
 * `wait_for_run`: blocks until a run (or a job's current run) finishes, reaches a step, or
 * raises an event — or any anomaly fires — then answers with the run's diagnosis. The waiting
 * is the domain's (server/runs/wait.ts), shared with REST and the CLI; this is its MCP face.
 */
import { z } from "zod";
import { ANOMALY_EVENT_TYPES } from "../../protocol/event_types.ts";
import { acquireWait, MAX_WAITS, MAX_WAITS_PER_TOKEN } from "../../server/runs/wait_slots.ts";
import { DEFAULT_WAIT_S, MAX_WAIT_S, waitAnswer } from "../../server/runs/wait.ts";
import { defineTool } from "../_tool.ts";
import { eventShape, nextActions } from "../_shapes.ts";
import { idField } from "./_fields.ts";

/** `wait_for_run`. */
export const waitForRunTool = defineTool({
  name: "wait_for_run",
  title: "Wait for a run",
  description: "Waits (without polling) until a run — or a job's current run — finishes, " +
    'reaches a step (until "step>=N"), or raises an event type (until "CHECKPOINT_CREATED"), ' +
    `and wakes early on any anomaly (${
      ANOMALY_EVENT_TYPES.join(", ")
    }). Returns why it woke, the event, and the run's diagnosis with next_actions. timeout_s ≤ ${MAX_WAIT_S}; ` +
    "call again with after_event_id = last_event_id to keep waiting past an anomaly. " +
    `At most ${MAX_WAITS_PER_TOKEN} waits per token and ${MAX_WAITS} per server are open at ` +
    "once (each call of a batch counts); past either, the call is refused with TooManyWaits.",
  kind: "wait",
  input: z.object({
    run_id: idField("The run to wait for").optional(),
    job_id: idField("Or the job: its current attempt's run, following retries").optional(),
    sweep_id: idField(
      "Or a sweep: wakes when it ends or a rung stops one of its trials (until is ignored)",
    ).optional(),
    until: z.string().max(64).optional().describe(
      '"finished" (default), "step>=N", or an event type such as "CHECKPOINT_CREATED" or "LOSS_NAN"',
    ),
    timeout_s: z.number().min(1).max(MAX_WAIT_S).optional().describe(
      `Seconds to wait at most (default ${DEFAULT_WAIT_S}, at most ${MAX_WAIT_S})`,
    ),
    after_event_id: z.number().int().min(0).optional().describe(
      "Only events after this id wake the wait (default: those raised after the call)",
    ),
  }),
  output: z.looseObject({
    reason: z.enum(["finished", "step", "event", "anomaly", "timeout", "cancelled"]).describe(
      "Why the wait ended",
    ),
    run_id: z.string().nullable(),
    job_id: z.string().nullable(),
    status: z.string().nullable().describe("The run's status now"),
    step: z.number().nullable(),
    event: eventShape.nullable().describe("The event that woke it"),
    last_event_id: z.number().describe("Pass as after_event_id to wait on from here"),
    waited_s: z.number(),
    diagnosis: z.looseObject({ summary: z.string() }).nullable().describe(
      "The run's diagnosis (see diagnose_run)",
    ),
    next_actions: nextActions,
    sweep: z.looseObject({ id: z.string(), status: z.string() }).optional().describe(
      "With sweep_id: the sweep now (see get_sweep)",
    ),
  }),
  async run(ctx, args, call) {
    const release = call.takeWaitSlot?.() ?? acquireWait(ctx, call.principal.token_id);
    try {
      return await waitAnswer(ctx, args, call);
    } finally {
      release();
    }
  },
});
