import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { type NodeCapacity, placeJobs, type QueuedJob } from "./place_jobs.ts";
import { checkPlacement, node, replayPlacement } from "./_testing.ts";

/** mulberry32: a small seeded generator, so the large queue is the same on every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function bigCluster(): { jobs: QueuedJob[]; nodes: NodeCapacity[] } {
  const rand = random(42);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const nodes = [
    node("gpu-0", "........"),
    node("gpu-1", "BBBB...."),
    node("gpu-2", ".B.B.B.B"),
    node("gpu-3", "x.x.X...", { avoid_foreign_gpus: true }),
    node("gpu-4", "BBBBBBBB", { cpu_slots: 4, cpu_running: 1 }),
    node("gpu-5", "....", { cpu_slots: 1 }),
    node("gpu-6", "........", { online: false }),
    node("cpu-0", "", { cpu_slots: 8, cpu_running: 6 }),
  ];
  const jobs: QueuedJob[] = [];
  for (let i = 0; i < 10_000; i++) {
    jobs.push({
      id: `j-${i}`,
      priority: pick([0, 0, 0, 1, 5, 10]),
      // Submission order unrelated to array order, as when the caller loads a queue unsorted.
      submit_seq: (i * 7919) % 10_000,
      gpus: pick([0, 1, 1, 1, 2, 2, 4, 8, 16]),
      node: rand() < 0.05 ? pick(["gpu-1", "gpu-5", "gpu-6", "nope"]) : undefined,
    });
  }
  return { jobs, nodes };
}

Deno.test("placeJobs() places a queue of 10,000 jobs on 8 nodes by the rules", () => {
  const { jobs, nodes } = bigCluster();
  const p = placeJobs(jobs, nodes);
  checkPlacement(jobs, nodes, p);
  replayPlacement(jobs, nodes, p);

  strictEqual(p.assignments.length + p.waiting.length, 10_000);
  ok(p.reservation !== null, "some job that can run reserves a node");
  // Every usable GPU on the online nodes (gpu-3 avoids its 3 foreign-used ones) is either
  // given out or held free by the reservation.
  const r = p.reservation;
  const given = p.assignments.flatMap((a) => a.gpu_indices.map((i) => `${a.node_id}/${i}`));
  const reservedNode = nodes.find((n) => n.id === r.node_id) as NodeCapacity;
  const held = r.gpu_indices.filter((i) =>
    !reservedNode.gpus[i].busy &&
    !(reservedNode.avoid_foreign_gpus && (reservedNode.gpus[i].foreign_mem_mb ?? 0) > 0) &&
    !given.includes(`${r.node_id}/${i}`)
  );
  strictEqual(given.length + held.length, 8 + 4 + 4 + 5 + 0 + 4);
  // CPU slots free on the online nodes: 2 + 2 + 2 + 2 + (4 - 1) + 1 + (8 - 6).
  strictEqual(p.assignments.filter((a) => a.gpu_indices.length === 0).length, 14);
  // The 16-GPU jobs can never run on 8-GPU nodes and say so.
  const huge = p.waiting.find((w) => jobs.find((j) => j.id === w.job_id)?.gpus === 16);
  ok(huge?.reason.endsWith('needs 16 GPUs, the largest online node "gpu-0" has 8'), huge?.reason);
  // Same facts, same decisions.
  deepStrictEqual(placeJobs(jobs.slice().reverse(), nodes.slice().reverse()), p);
});
