// The capacity left during one placement pass: free GPU slots and CPU slots per node, kept
// with a summary so that a job that cannot fit is recognised in O(1) instead of a scan.

import type { NodeCapacity, QueuedJob, Reservation } from "./place_jobs.ts";

/** One node's capacity as the pass uses it up. */
export interface NodeState {
  id: string;
  online: boolean;
  total: number;
  /** Usable and not held by the reservation, ascending. */
  free: number[];
  /** Held by gpuctl jobs (including ones placed earlier in this pass), ascending. */
  busy: number[];
  /** Idle for gpuctl but used by foreign processes on an avoiding node, ascending. */
  foreign: number[];
  cpuSlots: number;
  cpuFree: number;
}

/** The single reservation of a pass and how many currently free GPUs it keeps from others. */
export interface Held {
  reservation: Reservation;
  node: NodeState;
  freeHeld: number;
}

function ascending(a: number, b: number): number {
  return a - b;
}

function toState(node: NodeCapacity): NodeState {
  const free: number[] = [];
  const busy: number[] = [];
  const foreign: number[] = [];
  for (const gpu of node.gpus) {
    if (gpu.busy) busy.push(gpu.index);
    else if (node.avoid_foreign_gpus && (gpu.foreign_mem_mb ?? 0) > 0) foreign.push(gpu.index);
    else free.push(gpu.index);
  }
  const cpuSlots = Math.max(0, node.cpu_slots);
  return {
    id: node.id,
    online: node.online,
    total: node.gpus.length,
    free: free.sort(ascending),
    busy: busy.sort(ascending),
    foreign: foreign.sort(ascending),
    cpuSlots,
    cpuFree: Math.max(0, cpuSlots - node.cpu_running),
  };
}

/** Capacity of all nodes during one pass; every method keeps the summary fields current. */
export class Cluster {
  /** Online nodes by id. */
  readonly online: NodeState[];
  /** The online node with the most GPUs (lowest id on a tie), or null when none is online. */
  readonly largest: NodeState | null;
  /** CPU slots of all online nodes, used or not. */
  readonly cpuSlots: number;
  /** The most free, unreserved GPUs on one online node, and that node (lowest id on a tie). */
  maxFree = 0;
  maxFreeNode: NodeState | null = null;
  /** Free CPU slots over all online nodes. */
  cpuFree = 0;
  held: Held | null = null;
  readonly #byId: Map<string, NodeState>;

  constructor(nodes: NodeCapacity[]) {
    const states = nodes.map(toState).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    this.#byId = new Map(states.map((s) => [s.id, s]));
    this.online = states.filter((s) => s.online);
    let largest: NodeState | null = null;
    let cpuSlots = 0;
    for (const s of this.online) {
      if (largest === null || s.total > largest.total) largest = s;
      cpuSlots += s.cpuSlots;
    }
    this.largest = largest;
    this.cpuSlots = cpuSlots;
    this.#summarize();
  }

  /** The node with this id, online or not. */
  node(id: string): NodeState | undefined {
    return this.#byId.get(id);
  }

  /** True when some candidate node (only `pinned` when given) has at least g GPUs in total. */
  canEverFit(g: number, pinned: NodeState | null): boolean {
    const node = pinned ?? this.largest;
    return node !== null && node.total >= g;
  }

  /**
   * Takes the g lowest free GPUs of the node left with the fewest free GPUs (best fit), then
   * the lowest id; only `pinned` when given. Null when no such node has g free.
   */
  takeGpus(g: number, pinned: NodeState | null): { node: NodeState; indices: number[] } | null {
    let target: NodeState | null = null;
    if (pinned !== null) {
      if (pinned.free.length >= g) target = pinned;
    } else if (g <= this.maxFree) {
      for (const s of this.online) {
        if (s.free.length >= g && (target === null || s.free.length < target.free.length)) {
          target = s;
        }
      }
    }
    if (target === null) return null;
    const indices = target.free.splice(0, g);
    // Busy for the rest of the pass: a reservation may wait for them.
    target.busy = target.busy.concat(indices).sort(ascending);
    this.#summarize();
    return { node: target, indices };
  }

  /**
   * Takes a CPU slot on the node with the most free CPU slots, then the lowest id, so that
   * CPU-only jobs spread out; only `pinned` when given. Null when none is free.
   */
  takeCpu(pinned: NodeState | null): NodeState | null {
    let target: NodeState | null = null;
    if (pinned !== null) {
      if (pinned.cpuFree > 0) target = pinned;
    } else if (this.cpuFree > 0) {
      for (const s of this.online) {
        if (s.cpuFree > 0 && (target === null || s.cpuFree > target.cpuFree)) target = s;
      }
    }
    if (target === null) return null;
    target.cpuFree--;
    this.cpuFree--;
    return target;
  }

  /**
   * Reserves for a job of g GPUs the node where it is expected to fit first, among `pinned`
   * or else all online nodes with at least g GPUs in total: first nodes whose free or
   * gpuctl-busy GPUs cover g, then the most free now (the fewest running jobs to wait for),
   * then the most free or gpuctl-busy, then the lowest id. GPUs used by foreign processes
   * come last: gpuctl cannot say when they free up.
   *
   * The reservation holds the node's free GPUs (fewer than g, or the job would have been
   * placed) and the lowest busy ones, then the lowest foreign-used ones, to make g. Null
   * when no candidate has g GPUs in total.
   */
  reserve(job: QueuedJob, g: number, pinned: NodeState | null): Held | null {
    let best: NodeState | null = null;
    let bestKey = [-1, -1, -1];
    for (const s of pinned !== null ? [pinned] : this.online) {
      if (s.total < g) continue;
      const freeable = s.free.length + s.busy.length;
      const key = [freeable >= g ? 1 : 0, s.free.length, freeable];
      const better = key[0] !== bestKey[0]
        ? key[0] > bestKey[0]
        : key[1] !== bestKey[1]
        ? key[1] > bestKey[1]
        : key[2] > bestKey[2];
      if (better) {
        best = s;
        bestKey = key;
      }
    }
    if (best === null) return null;
    const freeHeld = best.free.length;
    const needed = g - freeHeld;
    const indices = best.free.splice(0, freeHeld)
      .concat(best.busy.slice(0, needed))
      .concat(best.foreign.slice(0, Math.max(0, needed - best.busy.length)))
      .sort(ascending);
    this.held = {
      reservation: { job_id: job.id, node_id: best.id, gpu_indices: indices },
      node: best,
      freeHeld,
    };
    this.#summarize();
    return this.held;
  }

  #summarize(): void {
    this.maxFree = 0;
    this.maxFreeNode = null;
    this.cpuFree = 0;
    for (const s of this.online) {
      if (s.free.length > this.maxFree) {
        this.maxFree = s.free.length;
        this.maxFreeNode = s;
      }
      this.cpuFree += s.cpuFree;
    }
  }
}
