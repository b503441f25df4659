/**
 * Placement: which queued jobs start now, on which GPU slots, and which single job holds a
 * reservation so that a stream of small jobs cannot starve it (DESIGN "Scheduling").
 *
 * Pure: plain data in, plain data out. The caller loads the queue (QUEUED jobs whose
 * dependencies succeeded) and the nodes' slot state (GPUs of DISPATCHED and RUNNING jobs
 * marked `busy`), then dispatches the assignments. Nothing is remembered between passes:
 * the reservation is recomputed from the same facts every time, and it converges because
 * the GPUs it holds stay free until the head job can take them.
 *
 * @module
 */

import { Cluster, type Held, type NodeState } from "./_cluster.ts";

/** CPU-only jobs a node runs at once unless its config says otherwise (DESIGN "Scheduling"). */
export const DEFAULT_CPU_SLOTS = 2;

/** A queued job as placement sees it. */
export interface QueuedJob {
  id: string;
  /** Higher starts first. */
  priority: number;
  /** Submission order, lower first; breaks priority ties. */
  submit_seq: number;
  /** GPUs needed, all on one node; 0 = CPU-only. */
  gpus: number;
  /** Only this node id may run the job. */
  node?: string | null;
}

/** One GPU of a node as placement sees it. */
export interface GpuSlot {
  index: number;
  /** Held by a DISPATCHED or RUNNING gpuctl job. */
  busy: boolean;
  /** Memory used by processes gpuctl did not start (NVML). */
  foreign_mem_mb?: number;
}

/** A node's capacity right now. */
export interface NodeCapacity {
  id: string;
  online: boolean;
  gpus: GpuSlot[];
  /** How many CPU-only jobs may run at once; see {@linkcode DEFAULT_CPU_SLOTS}. */
  cpu_slots: number;
  /** CPU-only jobs DISPATCHED or RUNNING there now. */
  cpu_running: number;
  /** Treat a GPU with foreign processes on it as busy. */
  avoid_foreign_gpus: boolean;
}

/** Start this job on these GPUs of this node (`CUDA_VISIBLE_DEVICES`; empty for CPU-only). */
export interface Assignment {
  job_id: string;
  node_id: string;
  gpu_indices: number[];
}

/** GPUs kept for the head job: the free ones it will use and the busy ones it waits for. */
export interface Reservation {
  job_id: string;
  node_id: string;
  gpu_indices: number[];
}

/** A job that does not start in this pass, and why, in words for a person. */
export interface WaitingJob {
  job_id: string;
  reason: string;
}

/** The outcome of one scheduling pass. */
export interface Placement {
  /** In queue order (priority desc, then submit_seq asc). */
  assignments: Assignment[];
  /** At most one; its job is also listed in `waiting`. */
  reservation: Reservation | null;
  /** Every job not assigned, in queue order. */
  waiting: WaitingJob[];
}

/** Queue order: priority first (higher sooner), then submission order, then id. */
export function compareJobs(a: QueuedJob, b: QueuedJob): number {
  if (a.priority !== b.priority) return b.priority - a.priority;
  if (a.submit_seq !== b.submit_seq) return a.submit_seq - b.submit_seq;
  // Equal rank: order by id so that the same facts always give the same placement.
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

/**
 * Decides one scheduling pass.
 *
 * Jobs are taken by priority desc, then `submit_seq` asc, then id. A job needing g ≥ 1 GPUs
 * gets the g lowest free indices of one online node, choosing the node that is left with the
 * fewest free GPUs (best fit), then the lowest node id. A CPU-only job (g = 0) takes a CPU
 * slot on the node with the most free CPU slots and never a GPU.
 *
 * The first GPU job that cannot start (the head) reserves one node: the GPUs free there now
 * stay free for it, and the lowest busy ones are those it waits for. Later jobs may still
 * start on other nodes and on GPUs of the reserved node it does not hold. A job too large for
 * every online node, or whose node is offline or unknown, never takes the reservation, and
 * CPU-only jobs need none (CPU slots are interchangeable and the head is served first).
 *
 * Cost: one sort of the queue, O(nodes) per placed job and O(1) per waiting job. Every
 * waiting job gets its own reason; the part after the colon is shared by the jobs in the same
 * situation, so a queue of 10,000 mostly costs 10,000 short concatenations.
 */
export function placeJobs(queue: QueuedJob[], nodes: NodeCapacity[]): Placement {
  const cluster = new Cluster(nodes);
  const assignments: Assignment[] = [];
  const waiting: WaitingJob[] = [];
  // A waiting state depends only on the job's node and GPU count and on the capacity left,
  // so it is built once per situation and dropped whenever capacity changes. Building a
  // fresh sentence per job made the garbage collector, not placement, the cost of a pass.
  const shared = new Map<string, string>();

  for (const job of queue.slice().sort(compareJobs)) {
    const g = job.gpus;
    const pinned = job.node != null ? cluster.node(job.node) ?? null : null;
    const eligible = Number.isInteger(g) && g >= 0 &&
      (job.node == null || pinned?.online === true);

    if (eligible && g === 0) {
      const node = cluster.takeCpu(pinned);
      if (node !== null) {
        assignments.push({ job_id: job.id, node_id: node.id, gpu_indices: [] });
        shared.clear();
        continue;
      }
    } else if (eligible) {
      const taken = cluster.takeGpus(g, pinned);
      if (taken !== null) {
        assignments.push({ job_id: job.id, node_id: taken.node.id, gpu_indices: taken.indices });
        shared.clear();
        continue;
      }
      if (cluster.held === null && cluster.canEverFit(g, pinned)) {
        const state = waitingState(cluster, job);
        const held = cluster.reserve(job, g, pinned) as Held;
        shared.clear();
        waiting.push({
          job_id: job.id,
          reason: `Cannot place job "${job.id}": ${state}; reserved GPUs ` +
            `${held.reservation.gpu_indices.join(", ")} on node "${held.node.id}", ` +
            `waiting for ${plural(g - held.freeHeld, "busy GPU")}`,
        });
        continue;
      }
    }

    const key = job.node == null ? `${g}` : `${g}@${job.node}`;
    let state = shared.get(key);
    if (state === undefined) {
      state = waitingState(cluster, job);
      shared.set(key, state);
    }
    waiting.push({ job_id: job.id, reason: `Cannot place job "${job.id}": ${state}` });
  }

  return { assignments, reservation: cluster.held?.reservation ?? null, waiting };
}

/** Why a job cannot start with the capacity left: the part of its reason after the colon. */
function waitingState(c: Cluster, job: QueuedJob): string {
  const g = job.gpus;
  if (!Number.isInteger(g) || g < 0) return `gpus must be a whole number ≥ 0, got ${g}`;
  let pinned: NodeState | null = null;
  if (job.node != null) {
    const node = c.node(job.node);
    if (node === undefined) return `node "${job.node}" is unknown`;
    if (!node.online) return `node "${job.node}" is offline`;
    pinned = node;
  }
  if (g === 0) {
    if (pinned !== null) {
      const used = pinned.cpuSlots - pinned.cpuFree;
      return `needs a CPU slot, node "${pinned.id}" has ${used} of ${
        plural(pinned.cpuSlots, "CPU slot")
      } in use`;
    }
    if (c.online.length === 0) return "needs a CPU slot, no node is online";
    return `needs a CPU slot, all ${plural(c.cpuSlots, "CPU slot")} are in use`;
  }
  const needs = `needs ${plural(g, "GPU")}`;
  let state: string;
  if (pinned !== null) {
    if (g > pinned.total) return `${needs}, node "${pinned.id}" has ${pinned.total}`;
    state = `${needs}, node "${pinned.id}" has ${pinned.free.length} free`;
  } else if (c.largest === null) {
    return `${needs}, no node is online`;
  } else if (g > c.largest.total) {
    return `${needs}, the largest online node "${c.largest.id}" has ${c.largest.total}`;
  } else {
    state = `${needs}, at most ${c.maxFree} free on one node` +
      (c.maxFreeNode !== null ? ` ("${c.maxFreeNode.id}")` : "");
  }
  const held = c.held;
  if (held !== null && held.freeHeld > 0 && (pinned === null || pinned === held.node)) {
    state += `; ${plural(held.freeHeld, "free GPU")} on node "${held.node.id}" held for job ` +
      `"${held.reservation.job_id}"`;
  }
  return state;
}
