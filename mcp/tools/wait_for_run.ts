/**
 * `wait_for_run`: blocks until a run (or a job's current run) finishes, reaches a step, or
 * raises an event — or any anomaly fires — then answers with the run's diagnosis. It waits on
 * the same feeds the SSE streams serve (events, and the run's points when a step is awaited):
 * each message makes it look again, so nothing polls.
 */
import { z } from "zod";
import type { EventRecord } from "../../protocol/objects.ts";
import { ANOMALY_EVENT_TYPES, type JobStatus } from "../../protocol/rest.ts";
import { EVENT_TYPES } from "../../protocol/event_types.ts";
import type { Context } from "../../server/context.ts";
import { invalidField } from "../../server/errors.ts";
import { eventMatches, lastEventId } from "../../server/events/service.ts";
import { events as eventsDb } from "../../server/db/mod.ts";
import { topics } from "../../server/bus/bus.ts";
import { getJob } from "../../server/jobs/service.ts";
import { getRun, runStreamEnd } from "../../server/runs/service.ts";
import { diagnoseRunById } from "../../server/semantic/mod.ts";
import { getSweep } from "../../server/sweeps/service.ts";
import { defineTool, type ToolCall, yieldWhenBusy } from "../_tool.ts";
import { acquireWait, MAX_WAITS, MAX_WAITS_PER_TOKEN } from "../wait_slots.ts";
import { eventShape, nextActions } from "../_shapes.ts";
import { idField } from "./_fields.ts";

/** The longest wait one call may ask for. */
export const MAX_WAIT_S = 600;
/** The wait when a call names none. */
export const DEFAULT_WAIT_S = 300;
/** How often a wait tells a client that asked for progress that it is still waiting. */
export const PROGRESS_EVERY_MS = 15_000;

const JOB_DONE: ReadonlySet<JobStatus> = new Set(["SUCCEEDED", "FAILED", "CANCELLED", "LOST"]);
const ANOMALIES: ReadonlySet<string> = new Set(ANOMALY_EVENT_TYPES);

/** What a call waits for, parsed from `until`. */
export type Until = { kind: "finished" } | { kind: "step"; step: number } | {
  kind: "event";
  type: string;
};

/** `"finished"`, `"step>=N"` (also `step:N`, `step N`) or an event type; else a ValidationError. */
export function parseUntil(until: string): Until {
  const text = until.trim();
  if (text === "finished") return { kind: "finished" };
  const step = /^step\s*(?:>=|≥|:|=|\s)\s*(\d{1,15})$/.exec(text);
  if (step) return { kind: "step", step: Number(step[1]) };
  if ((EVENT_TYPES as readonly string[]).includes(text)) return { kind: "event", type: text };
  throw invalidField(
    "wait_for_run arguments",
    "until",
    `${JSON.stringify(until)} is not "finished", "step>=N" or an event type (${
      EVENT_TYPES.join(", ")
    })`,
  );
}

/** Why a wait ended. */
export type WakeReason = "finished" | "step" | "event" | "anomaly" | "timeout" | "cancelled";

interface Target {
  run_id?: string;
  job_id?: string;
}

interface Wake {
  reason: WakeReason;
  event: EventRecord | null;
  run_id: string | null;
}

/** How long a wait may last, what ends it early, and how it tells it is still going. */
interface WaitOptions {
  timeoutMs: number;
  since: number;
  signal: AbortSignal;
  /** Called every `everyMs` while the wait goes on. */
  tick?: { everyMs: number; onTick: () => void };
}

/**
 * The plumbing every wait shares. `start` looks at the stored facts once and subscribes to
 * the bus; after that each message is judged by itself (`wake`), and a recheck of the store
 * (`recheck`: one row or two) runs only for messages that can change the answer, at most once
 * per turn of the loop. So a wait costs nothing per message of others, and never reads
 * history: what happened before the call is one indexed look.
 */
function waitOn(
  options: WaitOptions,
  wait: {
    /** The first look and the subscriptions; returns a wake, or the unsubscribe function. */
    start(wake: (w: Wake) => void, recheck: () => void): Wake | (() => void);
    /** Looks at the store again (the end of the run, the job's run); null while nothing holds. */
    recheck(): Wake | null;
    idleRun(): string | null;
  },
): Promise<Wake> {
  return new Promise<Wake>((resolve, reject) => {
    let settled = false;
    let unsubscribe = () => {};
    let pending = false;
    const settle = (wake: Wake | null, err?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(ticker);
      unsubscribe();
      options.signal.removeEventListener("abort", onAbort);
      if (err !== undefined) reject(err);
      else resolve(wake!);
    };
    const wake = (w: Wake) => settle(w);
    // Coalesced: a burst of messages in one commit costs one look at the store.
    const recheck = () => {
      if (settled || pending) return;
      pending = true;
      queueMicrotask(() => {
        pending = false;
        if (settled) return;
        try {
          const w = wait.recheck();
          if (w) settle(w);
        } catch (err) {
          settle(null, err);
        }
      });
    };
    const idle = (reason: "timeout" | "cancelled") =>
      settle({ reason, event: null, run_id: wait.idleRun() });
    const onAbort = () => idle("cancelled");
    const timer = setTimeout(() => idle("timeout"), options.timeoutMs);
    const ticker = options.tick
      ? setInterval(options.tick.onTick, options.tick.everyMs)
      : undefined;
    if (options.signal.aborted) return onAbort();
    options.signal.addEventListener("abort", onAbort);
    try {
      // Subscribed before the first look, so nothing that happens in between is missed.
      const started = wait.start(wake, recheck);
      if (typeof started === "function") {
        if (settled) started();
        else unsubscribe = started;
      } else settle(started);
    } catch (err) {
      settle(null, err);
    }
  });
}

/** The highest step of a metrics message, computed once per message for every waiter. */
const maxStepOf = new WeakMap<object, number>();
function messageMaxStep(m: { points: { step: number }[] }): number {
  let max = maxStepOf.get(m);
  if (max === undefined) {
    max = -1;
    for (const p of m.points) if (p.step > max) max = p.step;
    maxStepOf.set(m, max);
  }
  return max;
}

/** Whether an event can change whether a run or job has ended, or which run a job has. */
const changesState = (e: EventRecord) => e.type.startsWith("RUN_") || e.type.startsWith("JOB_");

/** Waits until a run or job ends, reaches a step, or raises an event; see `waitOn`. */
export function waitFor(
  ctx: Context,
  target: Target,
  until: Until,
  options: WaitOptions,
): Promise<Wake> {
  const filter = target.run_id ? { run_id: target.run_id } : { job_id: target.job_id };
  const wakeTypes = [
    ...ANOMALIES,
    ...(until.kind === "event" && !ANOMALIES.has(until.type) ? [until.type] : []),
  ];
  const currentRun = () => target.run_id ?? getJob(ctx, target.job_id!).run_id;
  let watchedRun: string | null = null;
  let unwatchPoints = () => {};
  let onWake: (w: Wake) => void = () => {};
  let recheckLater = () => {};
  const ofEvent = (e: EventRecord): Wake =>
    until.kind === "event" && e.type === until.type
      ? { reason: "event", event: e, run_id: currentRun() }
      : { reason: "anomaly", event: e, run_id: currentRun() };
  // The end of the run or job, then the step; follows a job's run to its points.
  const recheck = (): Wake | null => {
    const runId = currentRun();
    const finished = target.run_id
      ? runStreamEnd(ctx, target.run_id) !== null
      : JOB_DONE.has(getJob(ctx, target.job_id!).status);
    if (finished) return { reason: "finished", event: null, run_id: runId };
    if (until.kind !== "step" || !runId) return null;
    if (runId !== watchedRun) {
      unwatchPoints();
      watchedRun = runId;
      unwatchPoints = ctx.bus.subscribe<{ points: { step: number }[] }>(
        topics.metrics(runId),
        (m) => {
          if (messageMaxStep(m) >= until.step) {
            onWake({ reason: "step", event: null, run_id: runId });
          }
        },
      );
    }
    const step = getRun(ctx, runId).step;
    return step !== null && step >= until.step
      ? { reason: "step", event: null, run_id: runId }
      : null;
  };
  return waitOn(options, {
    start(wake, later) {
      onWake = wake;
      recheckLater = later;
      const stop = ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
        if (e.id <= options.since || !eventMatches(filter, e)) return;
        if (wakeTypes.includes(e.type)) onWake(ofEvent(e));
        else if (changesState(e)) recheckLater();
      });
      const off = () => {
        stop();
        unwatchPoints();
      };
      try {
        const stored = eventsDb.firstEventOfTypes(ctx.db, filter, wakeTypes, options.since);
        const w = stored ? ofEvent(stored) : recheck();
        if (w) {
          off();
          return w;
        }
      } catch (err) {
        off();
        throw err;
      }
      return off;
    },
    recheck,
    // The run a wait that ends without a wake is about: the job's current one.
    idleRun() {
      if (target.run_id) return target.run_id;
      try {
        return getJob(ctx, target.job_id!).run_id;
      } catch {
        return watchedRun;
      }
    },
  });
}

const SWEEP_WAKES = ["SWEEP_FINISHED", "SWEEP_TRIAL_STOPPED"];

/**
 * Waits until a sweep ends (SWEEP_FINISHED) or a rung stops one of its trials
 * (SWEEP_TRIAL_STOPPED): the events before the call are one indexed look (by type and id),
 * live ones are judged as they come.
 */
export function waitForSweep(
  ctx: Context,
  sweepId: string,
  options: WaitOptions,
): Promise<Wake> {
  const ofEvent = (e: EventRecord): Wake =>
    e.type === "SWEEP_FINISHED"
      ? { reason: "finished", event: e, run_id: null }
      : { reason: "event", event: e, run_id: e.run_id };
  const recheck = (): Wake | null =>
    getSweep(ctx, sweepId).status !== "RUNNING"
      ? { reason: "finished", event: null, run_id: null }
      : null;
  return waitOn(options, {
    start(wake, later) {
      const stop = ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
        if (e.id <= options.since || !e.type.startsWith("SWEEP_")) return;
        if ((e.data as { sweep_id?: string } | null)?.sweep_id !== sweepId) return;
        if (SWEEP_WAKES.includes(e.type)) wake(ofEvent(e));
        else later();
      });
      try {
        const stored = eventsDb.firstEventOfTypes(ctx.db, {}, SWEEP_WAKES, options.since, sweepId);
        const w = stored ? ofEvent(stored) : recheck();
        if (w) {
          stop();
          return w;
        }
      } catch (err) {
        stop();
        throw err;
      }
      return stop;
    },
    recheck,
    idleRun: () => null,
  });
}

const SENTENCE: Record<WakeReason, string> = {
  finished: "finished",
  step: "reached the step",
  event: "raised the awaited event",
  anomaly: "raised an anomaly",
  timeout: "was still going when the wait timed out",
  cancelled: "was still going when the wait was cancelled",
};

/** `wait_for_run`. */
export const waitForRunTool = defineTool({
  name: "wait_for_run",
  title: "Wait for a run",
  description: "Waits (without polling) until a run — or a job's current run — finishes, " +
    'reaches a step (until "step>=N"), or raises an event type (until "CHECKPOINT_CREATED"), ' +
    "and wakes early on any anomaly (OOM, LOSS_NAN, LOSS_SPIKE, OVERFITTING_SUSPECTED, STALLED, " +
    `…). Returns why it woke, the event, and the run's diagnosis with next_actions. timeout_s ≤ ${MAX_WAIT_S}; ` +
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

/** `wait_for_run`'s answer, once it has its slot. */
async function waitAnswer(
  ctx: Context,
  args: {
    run_id?: string;
    job_id?: string;
    sweep_id?: string;
    until?: string;
    timeout_s?: number;
    after_event_id?: number;
  },
  call: ToolCall,
) {
  const named = [args.run_id, args.job_id, args.sweep_id].filter((x) => x !== undefined);
  if (named.length !== 1) {
    throw invalidField(
      "wait_for_run arguments",
      "run_id",
      "name exactly one of run_id, job_id or sweep_id",
    );
  }
  if (args.sweep_id) return await waitSweepAnswer(ctx, args.sweep_id, args, call);
  const until = parseUntil(args.until ?? "finished");
  const target = { run_id: args.run_id, job_id: args.job_id };
  // Fail fast on an unknown id, before waiting.
  const jobId = target.job_id ?? getRun(ctx, target.run_id!).job_id;
  if (target.job_id) getJob(ctx, target.job_id);
  const started = performance.now();
  const since = args.after_event_id ?? lastEventId(ctx);
  const timeoutS = args.timeout_s ?? DEFAULT_WAIT_S;
  const progress = call.progress;
  const wake = await waitFor(ctx, target, until, {
    timeoutMs: timeoutS * 1000,
    since,
    signal: call.signal,
    tick: progress && {
      everyMs: call.progressEveryMs ?? PROGRESS_EVERY_MS,
      onTick: () => {
        const waited = Math.round((performance.now() - started) / 1000);
        void progress({
          progress: waited,
          total: timeoutS,
          message: `waiting ${waited} s of at most ${timeoutS} s`,
        }).catch(() => {});
      },
    },
  });
  // Waits that time out together wake in one turn: each answer (a diagnosis) takes its own.
  await yieldWhenBusy();
  const run = wake.run_id ? getRun(ctx, wake.run_id) : null;
  const diagnosis = run ? diagnoseRunById(ctx, run.id) : null;
  const lastId = Math.max(wake.event?.id ?? 0, since);
  const again = {
    tool: "wait_for_run",
    args: {
      ...(target.run_id ? { run_id: target.run_id } : { job_id: jobId }),
      until: args.until ?? "finished",
      after_event_id: lastId,
    },
    why: "Keep waiting from here",
  };
  const stillGoing = run && (run.status === "RUNNING" || run.status === "QUEUED");
  const actions = [
    ...(diagnosis?.next_actions.filter((a) => a.tool !== "wait_for_run") ?? []),
    ...(stillGoing || (!run && wake.reason === "timeout") ? [again] : []),
  ];
  const waited = Math.round((performance.now() - started) / 100) / 10;
  const who = run ? `Run ${run.name} (${run.id})` : `Job ${jobId}`;
  const what = wake.event ? ` ${wake.event.type}: ${wake.event.message}.` : "";
  return {
    data: {
      reason: wake.reason,
      until: args.until ?? "finished",
      run_id: run?.id ?? null,
      job_id: jobId,
      status: run?.status ?? null,
      step: run?.step ?? null,
      event: wake.event,
      last_event_id: lastId,
      waited_s: waited,
      diagnosis,
      next_actions: actions,
    },
    summary:
      `${who} ${SENTENCE[wake.reason]} after ${waited} s${
        run ? ` (status ${run.status}, step ${run.step ?? "?"})` : ""
      }.` +
      what + (diagnosis ? ` ${diagnosis.summary}` : "") +
      (actions.length
        ? ` Next: ${actions.map((a) => `${a.tool} ${JSON.stringify(a.args)}`).join("; ")}.`
        : ""),
  };
}

/** `wait_for_run {sweep_id}`: the sweep as it stands when the wait ends. */
async function waitSweepAnswer(
  ctx: Context,
  sweepId: string,
  args: { timeout_s?: number; after_event_id?: number },
  call: { signal: AbortSignal },
) {
  getSweep(ctx, sweepId); // an unknown id fails before waiting
  const started = performance.now();
  const since = args.after_event_id ?? lastEventId(ctx);
  const wake = await waitForSweep(ctx, sweepId, {
    timeoutMs: (args.timeout_s ?? DEFAULT_WAIT_S) * 1000,
    since,
    signal: call.signal,
  });
  await yieldWhenBusy();
  const sweep = getSweep(ctx, sweepId);
  const lastId = Math.max(wake.event?.id ?? 0, since);
  const waited = Math.round((performance.now() - started) / 100) / 10;
  const actions = [
    ...sweep.next_actions.filter((a) => a.tool !== "wait_for_run"),
    ...(sweep.status === "RUNNING"
      ? [{
        tool: "wait_for_run",
        args: { sweep_id: sweepId, after_event_id: lastId },
        why: "Keep waiting from here",
      }]
      : []),
  ];
  const what = wake.event ? ` ${wake.event.type}: ${wake.event.message}.` : "";
  return {
    data: {
      reason: wake.reason,
      until: "finished",
      run_id: wake.run_id,
      job_id: wake.event?.job_id ?? null,
      status: sweep.status,
      step: null,
      event: wake.event,
      last_event_id: lastId,
      waited_s: waited,
      diagnosis: null,
      next_actions: actions,
      sweep,
    },
    summary: `Waited ${waited} s (${wake.reason}).${what} ${sweep.summary}` +
      (actions.length
        ? ` Next: ${actions.map((a) => `${a.tool} ${JSON.stringify(a.args)}`).join("; ")}.`
        : ""),
  };
}
