// Builders and invariant checks shared by the scheduler's tests.

import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import type { NodeCapacity, Placement, QueuedJob, Reservation } from "./place_jobs.ts";

/**
 * A node from a picture of its GPUs, one character each by index: `.` free, `B` busy with a
 * gpuctl job, `x` idle for gpuctl but used by a foreign process (1000 MB), `X` both.
 */
export function node(
  id: string,
  gpus: string,
  opts: Partial<Omit<NodeCapacity, "id" | "gpus">> = {},
): NodeCapacity {
  return {
    id,
    online: true,
    cpu_slots: 2,
    cpu_running: 0,
    avoid_foreign_gpus: false,
    ...opts,
    gpus: [...gpus].map((c, index) => ({
      index,
      busy: c === "B" || c === "X",
      foreign_mem_mb: c === "x" || c === "X" ? 1000 : 0,
    })),
  };
}

/** A job before it is queued: `queue()` numbers submissions in the order given. */
export type JobSpec = Omit<QueuedJob, "submit_seq"> & { submit_seq?: number };

/** A job needing `gpus` GPUs, priority 0 unless said. */
export function job(id: string, gpus: number, opts: Partial<QueuedJob> = {}): JobSpec {
  return { id, gpus, priority: 0, ...opts };
}

/** Jobs submitted in the order given unless they carry their own `submit_seq`. */
export function queue(...specs: JobSpec[]): QueuedJob[] {
  return specs.map((s, i) => ({ ...s, submit_seq: s.submit_seq ?? i + 1 }));
}

/** Asserts what every placement must satisfy, whatever the input. */
export function checkPlacement(jobs: QueuedJob[], nodes: NodeCapacity[], p: Placement): void {
  const jobById = new Map(jobs.map((j) => [j.id, j]));
  const nodeById = new Map(nodes.map((n) => [n.id, n]));
  const seen = new Set<string>();
  /** Slot → the job given it. */
  const taken = new Map<string, QueuedJob>();
  const cpuTaken = new Map<string, number>();

  for (const a of p.assignments) {
    ok(!seen.has(a.job_id), `job "${a.job_id}" placed twice`);
    seen.add(a.job_id);
    const j = jobById.get(a.job_id);
    const n = nodeById.get(a.node_id);
    ok(j !== undefined && n !== undefined, `assignment ${JSON.stringify(a)} names unknown ids`);
    ok(n.online, `job "${a.job_id}" placed on offline node "${n.id}"`);
    ok(j.node == null || j.node === n.id, `job "${j.id}" placed off its node "${j.node}"`);
    strictEqual(a.gpu_indices.length, j.gpus, `job "${j.id}" got the wrong number of GPUs`);
    if (j.gpus === 0) cpuTaken.set(n.id, (cpuTaken.get(n.id) ?? 0) + 1);
    for (const i of a.gpu_indices) {
      const gpu = n.gpus.find((g) => g.index === i);
      ok(gpu !== undefined && !gpu.busy, `job "${j.id}" got busy or missing GPU ${i}`);
      ok(
        !(n.avoid_foreign_gpus && (gpu.foreign_mem_mb ?? 0) > 0),
        `job "${j.id}" got foreign-used GPU ${i} on avoiding node "${n.id}"`,
      );
      const slot = `${n.id}/${i}`;
      ok(!taken.has(slot), `slot ${slot} given twice`);
      taken.set(slot, j);
    }
  }
  for (const [id, count] of cpuTaken) {
    const n = nodeById.get(id) as NodeCapacity;
    ok(count <= n.cpu_slots - n.cpu_running, `node "${id}" got ${count} CPU jobs`);
  }
  for (const w of p.waiting) {
    ok(!seen.has(w.job_id), `job "${w.job_id}" both placed and waiting`);
    seen.add(w.job_id);
    ok(w.reason.startsWith(`Cannot place job "${w.job_id}": `), w.reason);
  }
  strictEqual(seen.size, jobs.length, "every job is placed or waiting");
  if (p.reservation !== null) {
    const r = p.reservation;
    ok(p.waiting.some((w) => w.job_id === r.job_id), "the reserving job waits");
    strictEqual(r.gpu_indices.length, jobById.get(r.job_id)?.gpus);
    const head = jobById.get(r.job_id) as QueuedJob;
    for (const i of r.gpu_indices) {
      // A reservation may wait for a GPU that a job ahead of it took in this pass, never for
      // one that a job behind it took.
      const holder = taken.get(`${r.node_id}/${i}`);
      ok(
        holder === undefined || ranksBefore(holder, head),
        `reserved slot ${r.node_id}/${i} was given to job "${holder?.id}" behind the head`,
      );
    }
  }
}

function ranksBefore(a: QueuedJob, b: QueuedJob): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.submit_seq !== b.submit_seq) return a.submit_seq < b.submit_seq;
  return a.id < b.id;
}

/**
 * Replays a placement in queue order and asserts each decision against the state at that
 * moment: assigned slots were free and unreserved, the best-fit node and lowest indices were
 * chosen, a waiting job really had no room, and the reservation went to the first job that
 * could not start but could run on some online node.
 */
export function replayPlacement(jobs: QueuedJob[], nodes: NodeCapacity[], p: Placement): void {
  const order = jobs.slice().sort((a, b) => (ranksBefore(a, b) ? -1 : ranksBefore(b, a) ? 1 : 0));
  const assigned = new Map(p.assignments.map((a) => [a.job_id, a]));
  const online = nodes.filter((n) => n.online).sort((a, b) => (a.id < b.id ? -1 : 1));
  const avail = new Map(online.map((n) => [
    n.id,
    n.gpus
      .filter((g) => !g.busy && !(n.avoid_foreign_gpus && (g.foreign_mem_mb ?? 0) > 0))
      .map((g) => g.index)
      .sort((a, b) => a - b),
  ]));
  const cpu = new Map(online.map((n) => [n.id, Math.max(0, n.cpu_slots - n.cpu_running)]));
  const total = new Map(online.map((n) => [n.id, n.gpus.length]));
  let reserved = false;

  for (const j of order) {
    const allowed = online.filter((n) => j.node == null || n.id === j.node).map((n) => n.id);
    const a = assigned.get(j.id);
    if (!Number.isInteger(j.gpus) || j.gpus < 0) {
      ok(a === undefined, `job "${j.id}" with gpus ${j.gpus} was placed`);
      continue;
    }
    if (j.gpus === 0) {
      const room = allowed.filter((id) => (cpu.get(id) as number) > 0);
      if (a === undefined) {
        ok(room.length === 0, `CPU job "${j.id}" waits while "${room[0]}" has a CPU slot`);
        continue;
      }
      const most = Math.max(...room.map((id) => cpu.get(id) as number));
      strictEqual(a.node_id, room.find((id) => cpu.get(id) === most), `CPU job "${j.id}" node`);
      cpu.set(a.node_id, most - 1);
      continue;
    }
    const fits = allowed.filter((id) => (avail.get(id) as number[]).length >= j.gpus);
    if (a !== undefined) {
      const leftover = (id: string) => (avail.get(id) as number[]).length - j.gpus;
      const best = fits.reduce((x, y) => (leftover(y) < leftover(x) ? y : x));
      strictEqual(a.node_id, best, `job "${j.id}" best-fit node`);
      const free = avail.get(best) as number[];
      deepStrictEqual(a.gpu_indices, free.slice(0, j.gpus), `job "${j.id}" lowest free indices`);
      avail.set(best, free.slice(j.gpus));
      continue;
    }
    ok(fits.length === 0, `job "${j.id}" waits while node "${fits[0]}" has room`);
    const possible = allowed.some((id) => (total.get(id) as number) >= j.gpus);
    const isHead = p.reservation?.job_id === j.id;
    if (!reserved && possible) {
      ok(isHead, `job "${j.id}" is the first that cannot start, but holds no reservation`);
    }
    if (isHead) {
      ok(!reserved && possible, `job "${j.id}" may not hold the reservation`);
      const r = p.reservation as Reservation;
      ok(allowed.includes(r.node_id), `reservation on a node job "${j.id}" may not use`);
      const free = avail.get(r.node_id) as number[];
      ok(free.every((i) => r.gpu_indices.includes(i)), "the reservation holds every free GPU");
      avail.set(r.node_id, []);
      reserved = true;
    }
  }
  ok(p.reservation === null || reserved, "the reservation belongs to a waiting job");
}
