/**
 * Waiting, for every face: until a run (or a job's current run) finishes, reaches a step or
 * raises an event — waking early on any anomaly — or until a sweep ends or stops a trial. MCP's
 * `wait_for_run`, `GET /api/{runs,jobs,sweeps}/{id}/wait` and `gpuctl run wait` all answer
 * with `waitAnswer`. A wait listens to the same feeds the SSE streams serve (events, and the
 * run's points when a step is awaited): each message makes it look again, so nothing polls.
 */
import type { EventRecord, NextAction } from "../../protocol/objects.ts";
import {
  DEFAULT_WAIT_S,
  MAX_WAIT_S,
  type WaitResult,
  type WakeReason,
} from "../../protocol/waits.ts";
import { ANOMALY_EVENT_TYPES } from "../../protocol/event_types.ts";
import type { JobStatus } from "../../protocol/vocabulary.ts";
import { EVENT_TYPES } from "../../protocol/event_types.ts";
import type { Context } from "../context.ts";
import { invalidField } from "../errors.ts";
import { eventMatches, lastEventId } from "../events/service.ts";
import { events as eventsDb } from "../db/mod.ts";
import { topics } from "../bus/bus.ts";
import { getJob } from "../jobs/service.ts";
import { getRun, runStreamEnd } from "./service.ts";
import { diagnoseRunById } from "../semantic/mod.ts";
import { getSweep } from "../sweeps/service.ts";

export { DEFAULT_WAIT_S, MAX_WAIT_S, type WakeReason };

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
    "wait arguments",
    "until",
    `${JSON.stringify(until)} is not "finished", "step>=N" or an event type (${
      EVENT_TYPES.join(", ")
    })`,
  );
}

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

/** What a wait is asked: exactly one of run_id, job_id or sweep_id, and how long, for what. */
export interface WaitArgs {
  run_id?: string;
  job_id?: string;
  sweep_id?: string;
  until?: string;
  timeout_s?: number;
  after_event_id?: number;
}

/** How a face's call waits: cancelled with `signal`; told it is still going with `progress`. */
export interface WaitCall {
  signal: AbortSignal;
  progress?: (p: { progress: number; total: number; message: string }) => Promise<void>;
  progressEveryMs?: number;
}

/** Lets other work run before an answer is built: waits that time out together wake in one turn. */
const nextTurn = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

/**
 * Refuses a wait that cannot be waited for, before any waiting: a bad `until` or `timeout_s`,
 * not exactly one of run_id, job_id or sweep_id, or an id that does not exist.
 */
export function checkWait(ctx: Context, args: WaitArgs): void {
  if (args.timeout_s !== undefined && !(args.timeout_s >= 1 && args.timeout_s <= MAX_WAIT_S)) {
    throw invalidField("wait arguments", "timeout_s", `must be 1 to ${MAX_WAIT_S} seconds`);
  }
  const named = [args.run_id, args.job_id, args.sweep_id].filter((x) => x !== undefined);
  if (named.length !== 1) {
    throw invalidField(
      "wait arguments",
      "run_id",
      "name exactly one of run_id, job_id or sweep_id",
    );
  }
  if (args.sweep_id) getSweep(ctx, args.sweep_id);
  else {
    parseUntil(args.until ?? "finished");
    if (args.run_id) getRun(ctx, args.run_id);
    else getJob(ctx, args.job_id!);
  }
}

/**
 * Waits as `args` say and answers: why it woke, the event, the run (status, step) and its
 * diagnosis with next actions, or the sweep. Unknown ids and a bad `until` fail before waiting.
 * The caller holds a wait slot (`acquireWait`) for as long as this runs.
 */
export async function waitAnswer(
  ctx: Context,
  args: WaitArgs,
  call: WaitCall,
): Promise<{ data: Omit<WaitResult, "summary">; summary: string }> {
  checkWait(ctx, args);
  if (args.sweep_id) return await waitSweepAnswer(ctx, args.sweep_id, args, call);
  const until = parseUntil(args.until ?? "finished");
  const target = { run_id: args.run_id, job_id: args.job_id };
  const jobId = target.job_id ?? getRun(ctx, target.run_id!).job_id;
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
  await nextTurn();
  const run = wake.run_id ? getRun(ctx, wake.run_id) : null;
  const diagnosis = run ? diagnoseRunById(ctx, run.id) : null;
  const lastId = Math.max(wake.event?.id ?? 0, since);
  const again: NextAction = {
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
  call: WaitCall,
) {
  const started = performance.now();
  const since = args.after_event_id ?? lastEventId(ctx);
  const wake = await waitForSweep(ctx, sweepId, {
    timeoutMs: (args.timeout_s ?? DEFAULT_WAIT_S) * 1000,
    since,
    signal: call.signal,
  });
  await nextTurn();
  const sweep = getSweep(ctx, sweepId);
  const lastId = Math.max(wake.event?.id ?? 0, since);
  const waited = Math.round((performance.now() - started) / 100) / 10;
  const actions = [
    ...sweep.next_actions.filter((a) => a.tool !== "wait_for_run"),
    ...(sweep.status === "RUNNING"
      ? [{
        tool: "wait_for_run" as const,
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
