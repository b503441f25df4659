/**
 * The rules' I/O shell: feeds stored points and log activity to each running run's rule
 * state, stores the events the pure rules raise, and runs the time-driven rules
 * periodically. State lives in memory and is rebuilt from the store after a restart.
 */
import type { EventRecord } from "../../protocol/objects.ts";
import { jobs as jobsDb, metrics as metricsDb, runs as runsDb } from "../db/mod.ts";
import type { StoredPoint } from "../db/metrics.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import { emitEvent } from "../events/emit.ts";
import { cancelJob } from "../jobs/service.ts";
import { stopOnReason } from "./stop_on.ts";
import {
  checkTimers,
  createRunRuleState,
  observeActivity,
  observePoints,
  type ResolvedRulesConfig,
  type RuleEvent,
  type RunRuleState,
} from "./mod.ts";

/** The keys a rebuild replays: losses (NaN, spike, overfitting) and GPU utilisation. */
const REBUILD_KEYS = ["%loss%", "sys/gpu%/util"];

export interface RulesEngineOptions {
  config: ResolvedRulesConfig;
  /** How often STALLED and GPU_UNDERUTILIZED are checked. @default 60_000 */
  timerIntervalMs?: number;
}

export class RulesEngine {
  #ctx: Context;
  #cfg: ResolvedRulesConfig;
  #intervalMs: number;
  #states = new Map<string, RunRuleState>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #unsubscribe: (() => void)[] = [];

  constructor(ctx: Context, options: RulesEngineOptions) {
    this.#ctx = ctx;
    this.#cfg = options.config;
    this.#intervalMs = options.timerIntervalMs ?? 60_000;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    const bus = this.#ctx.bus;
    this.#unsubscribe = [
      bus.subscribe<{ run_id: string; points: StoredPoint[] }>(
        topics.allMetrics,
        (m) => this.#onPoints(m),
      ),
      bus.subscribe<{ run_id: string; lines: { ts: string }[] }>(
        topics.allLogs,
        (m) => this.#onLines(m),
      ),
      // Every anomaly, whoever raised it (these rules, the agent, the job's end), may stop
      // a job that asked for it.
      bus.subscribe<EventRecord>(topics.events, (e) => this.#onEvent(e)),
    ];
    this.#timer = setInterval(() => this.runOnce(), this.#intervalMs);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    for (const off of this.#unsubscribe) off();
    this.#unsubscribe = [];
  }

  /** The time-driven rules over every running run; forgets runs that ended. Returns events raised. */
  runOnce(nowS = this.#ctx.now().getTime() / 1000): number {
    let raised = 0;
    for (const runId of [...this.#states.keys()]) {
      const run = runsDb.getRun(this.#ctx.db, runId);
      if (!run || run.status !== "RUNNING") {
        this.#states.delete(runId);
        continue;
      }
    }
    const running = runsDb.listRuns(this.#ctx.db, { status: "RUNNING" }, 1000);
    for (const run of running.items) {
      const state = this.#stateOf(run.id, Number.MAX_SAFE_INTEGER);
      raised += this.#store(run.id, checkTimers(state, nowS, this.#cfg));
    }
    return raised;
  }

  #onPoints(m: { run_id: string; points: StoredPoint[] }): void {
    // Rebuild from what was stored before this batch, then judge the batch itself.
    const first = m.points.reduce((lo, p) => Math.min(lo, p.seq), Infinity);
    const state = this.#stateOf(m.run_id, first);
    this.#store(m.run_id, observePoints(state, m.points, this.#cfg));
  }

  /** Cancels the job of the event's run when its `stop_on` names the event's type. */
  #onEvent(e: EventRecord): void {
    const ctx = this.#ctx;
    const jobId = e.job_id ?? (e.run_id ? runsDb.getRun(ctx.db, e.run_id)?.job_id : null);
    if (!jobId) return;
    const job = jobsDb.getJob(ctx.db, jobId);
    const reason = job ? stopOnReason(job, e) : null;
    if (!reason) return;
    cancelJob(ctx, job!.id, `stop_on ${e.type}`, reason);
    ctx.log.info("job stopped by an anomaly it asked to stop on", {
      job: job!.id,
      event: e.id,
      type: e.type,
    });
  }

  #onLines(m: { run_id: string; lines: { ts: string }[] }): void {
    const state = this.#states.get(m.run_id);
    if (!state) return; // a run with no points yet: its STALLED clock starts at its start time
    const last = Date.parse(m.lines[m.lines.length - 1].ts);
    if (Number.isFinite(last)) observeActivity(state, last / 1000);
  }

  #stateOf(runId: string, beforeSeq: number): RunRuleState {
    let state = this.#states.get(runId);
    if (state) return state;
    const run = runsDb.getRun(this.#ctx.db, runId);
    const started = run?.started_at ?? run?.created_at;
    state = createRunRuleState({ startedAtS: started ? Date.parse(started) / 1000 : null });
    const history = metricsDb.pointsBefore(this.#ctx.db, runId, beforeSeq, REBUILD_KEYS);
    // Events of the replay were stored when they first happened.
    if (history.length) observePoints(state, history, this.#cfg);
    this.#states.set(runId, state);
    return state;
  }

  #store(runId: string, events: RuleEvent[]): number {
    if (events.length === 0) return 0;
    const ctx = this.#ctx;
    const run = runsDb.getRun(ctx.db, runId);
    ctx.db.tx(() => {
      for (const e of events) {
        emitEvent(ctx, {
          type: e.type,
          severity: e.severity,
          run_id: runId,
          job_id: run?.job_id ?? null,
          node_id: run?.node_id ?? null,
          message: e.message,
          data: e.data,
        });
      }
    });
    return events.length;
  }
}
