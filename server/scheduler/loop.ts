/**
 * The scheduler's I/O shell: loads the queue and the nodes' capacity, asks the pure
 * `placeJobs` where jobs go, and applies its answer (runs created, jobs DISPATCHED, dispatch
 * frames sent). Runs on every state change (the `jobs` and `nodes` topics) and
 * on a slow timer as a backstop.
 */
import type { DispatchSpec } from "../../protocol/agent.ts";
import type { NodeRecord } from "../../protocol/objects.ts";
import { jobs as jobsDb, nodes as nodesDb } from "../db/mod.ts";
import type { JobState } from "../db/jobs.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import { emitEvent } from "../events/emit.ts";
import { DEFAULT_GRACE_S, dispatchJob } from "../jobs/transitions.ts";
import { type NodeCapacity, placeJobs, type QueuedJob, resolveDependencies } from "./mod.ts";
import { budgetHolds } from "../budgets/service.ts";

/** What the loop needs from the agent gateway. */
export interface NodeLink {
  /** Nodes with a live agent connection. */
  connectedNodes(): Set<string>;
  /** Memory held by processes no job owns, per node and GPU index (from heartbeats). */
  foreignMemory(nodeId: string): Map<number, number>;
  sendDispatch(nodeId: string, spec: DispatchSpec): boolean;
}

export interface SchedulerLoopOptions {
  /** @default 5000 */
  intervalMs?: number;
}

/** Counts of one pass, for logs and tests. */
export interface PassResult {
  dispatched: number;
  waiting: number;
  dependency_failures: number;
}

export class SchedulerLoop {
  #ctx: Context;
  #link: NodeLink;
  #intervalMs: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #pending = false;
  #unsubscribe = () => {};
  #reasons = new Map<string, string>();

  constructor(ctx: Context, link: NodeLink, options: SchedulerLoopOptions = {}) {
    this.#ctx = ctx;
    this.#link = link;
    this.#intervalMs = options.intervalMs ?? 5000;
  }

  start(): void {
    if (this.#timer !== undefined) return;
    const unsubscribeJobs = this.#ctx.bus.subscribe(topics.jobs, () => this.trigger());
    const unsubscribeNodes = this.#ctx.bus.subscribe(topics.nodes, () => this.trigger());
    this.#unsubscribe = () => {
      unsubscribeJobs();
      unsubscribeNodes();
    };
    this.#timer = setInterval(() => this.trigger(), this.#intervalMs);
    this.trigger();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#unsubscribe();
  }

  /** Asks for a pass soon; many triggers in one turn make one pass. */
  trigger(): void {
    if (this.#pending || this.#timer === undefined) return;
    this.#pending = true;
    setTimeout(() => {
      this.#pending = false;
      try {
        this.runOnce();
      } catch (err) {
        this.#ctx.log.error("scheduling pass failed", {
          error: String((err as Error)?.stack ?? err),
        });
      }
    }, 0);
  }

  /** One scheduling pass. */
  runOnce(): PassResult {
    const ctx = this.#ctx;
    const sends: [string, DispatchSpec][] = [];
    const result = ctx.db.tx(() => {
      const active = jobsDb.jobsInStatus(ctx.db, ["QUEUED", "DISPATCHED", "RUNNING"]);
      // A lost job's next attempt waits until its silent node's lease has surely expired.
      const now = ctx.now().getTime();
      const queued = active.filter((j) =>
        j.status === "QUEUED" && !(j.not_before && Date.parse(j.not_before) > now)
      );
      if (queued.length === 0) return { dispatched: 0, waiting: 0, dependency_failures: 0 };
      const deps = this.#resolveDependencies(queued);
      const ready = new Set(deps.ready);
      // A token's jobs past its budget (GPUs held, GPU-hours) wait, with the budget as reason.
      const held = budgetHolds(ctx, queued.filter((j) => ready.has(j.id)), active);
      const queue: QueuedJob[] = queued.filter((j) => ready.has(j.id) && !held.has(j.id)).map((
        j,
      ) => ({
        id: j.id,
        priority: j.priority,
        submit_seq: j.seq,
        gpus: j.gpus,
        node: j.node,
      }));
      const nodes = this.#capacity(active.filter((j) => j.status !== "QUEUED"));
      const placement = placeJobs(queue, nodes);
      const byId = new Map(queued.map((j) => [j.id, j]));
      for (const a of placement.assignments) {
        const job = byId.get(a.job_id)!;
        const { run_id } = dispatchJob(ctx, job, a.node_id, a.gpu_indices);
        sends.push([a.node_id, toSpec(job, run_id, a.gpu_indices)]);
        this.#reasons.delete(job.id);
      }
      this.#recordReasons(
        [...placement.waiting, ...[...held].map(([job_id, reason]) => ({ job_id, reason }))],
        deps.blocked,
      );
      return {
        dispatched: placement.assignments.length,
        waiting: placement.waiting.length + held.size + deps.blocked.length,
        dependency_failures: deps.failed,
      };
    });
    for (const [nodeId, spec] of sends) {
      if (!this.#link.sendDispatch(nodeId, spec)) {
        ctx.log.warn("dispatch not delivered; the heartbeat check will requeue it", {
          node: nodeId,
          job: spec.job_id,
        });
      }
    }
    if (result.dispatched) ctx.log.info("scheduled", { ...result });
    return result;
  }

  #resolveDependencies(queued: JobState[]) {
    const ctx = this.#ctx;
    const statusCache = new Map<string, JobState | null>();
    const statusOf = (id: string) => {
      if (!statusCache.has(id)) statusCache.set(id, jobsDb.getJob(ctx.db, id));
      return statusCache.get(id)?.status;
    };
    const resolved = resolveDependencies(
      queued.map((j) => ({ id: j.id, after: j.after })),
      statusOf,
    );
    const at = ctx.now().toISOString();
    for (const f of resolved.failed) {
      jobsDb.updateJob(
        ctx.db,
        f.job_id,
        {
          status: "FAILED",
          reason: f.reason,
          finished_at: at,
        },
        at,
        ["QUEUED"],
      );
      emitEvent(ctx, {
        type: "JOB_DEPENDENCY_FAILED",
        severity: "warning",
        job_id: f.job_id,
        message: f.reason,
      });
    }
    return { ready: resolved.ready, blocked: resolved.blocked, failed: resolved.failed.length };
  }

  #capacity(running: JobState[]): NodeCapacity[] {
    const connected = this.#link.connectedNodes();
    return capacityOf(
      nodesDb.listNodes(this.#ctx.db),
      running,
      (id) => connected.has(id),
      (id) => this.#link.foreignMemory(id),
    );
  }

  /** Keeps each waiting job's reason current, writing only the ones that changed. */
  #recordReasons(waiting: { job_id: string; reason: string }[], blocked: string[]) {
    const ctx = this.#ctx;
    const at = ctx.now().toISOString();
    const reasons: [string, string][] = [
      ...waiting.map((w) => [w.job_id, w.reason] as [string, string]),
      ...blocked.map((id) =>
        [id, "Waiting for the jobs it runs after to succeed"] as [string, string]
      ),
    ];
    for (const [id, reason] of reasons) {
      if (this.#reasons.get(id) === reason) continue;
      this.#reasons.set(id, reason);
      jobsDb.updateJob(ctx.db, id, { reason }, at, ["QUEUED"]);
    }
  }
}

/**
 * Each node's capacity: its GPUs, those the `running` attempts hold, and the memory of
 * processes no job owns. `connected` says whether a node's agent is connected now.
 */
export function capacityOf(
  nodes: NodeRecord[],
  running: JobState[],
  connected: (nodeId: string) => boolean,
  foreignMemory: (nodeId: string) => Map<number, number>,
): NodeCapacity[] {
  return nodes.map((n) => {
    // A Slurm pool's GPUs are Slurm's to share out: it gets every job that fits the
    // partition, and Slurm queues what cannot start yet (its reason becomes the job's).
    const mine = n.pool ? [] : running.filter((j) => j.node_id === n.id);
    const busy = new Set(mine.flatMap((j) => j.gpu_indices));
    const foreign = foreignMemory(n.id);
    return {
      id: n.id,
      online: n.status === "ONLINE" && connected(n.id),
      gpus: n.gpus.map((g) => ({
        index: g.index,
        busy: busy.has(g.index),
        foreign_mem_mb: foreign.get(g.index) ?? 0,
      })),
      cpu_slots: n.cpu_slots,
      cpu_running: mine.filter((j) => j.gpus === 0).length,
      avoid_foreign_gpus: n.avoid_foreign_gpus,
    };
  });
}

/** The dispatch frame's job for an attempt. */
export function toSpec(job: JobState, runId: string, gpuIndices: number[]): DispatchSpec {
  return {
    job_id: job.id,
    attempt: job.attempt,
    run_id: runId,
    name: job.name,
    kind: job.kind,
    project: job.project,
    experiment: job.experiment,
    command: job.command,
    shell: job.shell,
    working_dir: job.working_dir,
    env: job.env,
    gpu_indices: gpuIndices,
    runner: job.runner,
    image: job.image,
    tensorboard_dir: job.tensorboard_dir,
    checkpoint_dir: job.checkpoint_dir,
    grace_s: job.grace_s ?? DEFAULT_GRACE_S,
    max_steps: job.max_steps,
    on_node_lost: job.on_node_lost,
    ...(job.resume_from ? { resume_from: job.resume_from } : {}),
  };
}
