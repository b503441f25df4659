import { deepStrictEqual } from "node:assert/strict";
import { type Assignment, type NodeCapacity, placeJobs, type Reservation } from "./place_jobs.ts";
import { checkPlacement, job, type JobSpec, node, queue, replayPlacement } from "./_testing.ts";

interface Case {
  name: string;
  nodes: NodeCapacity[];
  queue: JobSpec[];
  /** `[job, node, gpu indices]` in queue order. */
  assignments: [string, string, number[]][];
  reservation?: Reservation | null;
  /** Job ids in queue order. */
  waiting: string[];
  /** Exact reasons for some waiting jobs. */
  reasons?: Record<string, string>;
}

const cases: Case[] = [
  // Exclusive slots
  {
    name: "never gives a busy GPU to a queued job",
    nodes: [node("a", "B.")],
    queue: [job("j1", 1), job("j2", 1)],
    assignments: [["j1", "a", [1]]],
    reservation: { job_id: "j2", node_id: "a", gpu_indices: [0] },
    waiting: ["j2"],
  },
  {
    name: "gives each free GPU to one job only",
    nodes: [node("a", "..")],
    queue: [job("j1", 1), job("j2", 1), job("j3", 1)],
    assignments: [["j1", "a", [0]], ["j2", "a", [1]]],
    waiting: ["j3"],
  },
  // Order
  {
    name: "starts higher priority first, then earlier submissions",
    nodes: [node("a", "..")],
    queue: [job("low", 1, { priority: 0 }), job("hi-late", 1, { priority: 5 }), job("mid", 1)],
    assignments: [["hi-late", "a", [0]], ["low", "a", [1]]],
    waiting: ["mid"],
  },
  {
    name: "orders equal priorities by submit_seq, not by position in the input",
    nodes: [node("a", ".")],
    queue: [job("second", 1, { submit_seq: 20 }), job("first", 1, { submit_seq: 10 })],
    assignments: [["first", "a", [0]]],
    waiting: ["second"],
  },
  // Multi-GPU on one node
  {
    name: "never splits a multi-GPU job across nodes",
    nodes: [node("a", "B."), node("b", ".B")],
    queue: [job("big", 2)],
    assignments: [],
    reservation: { job_id: "big", node_id: "a", gpu_indices: [0, 1] },
    waiting: ["big"],
    reasons: {
      big: 'Cannot place job "big": needs 2 GPUs, at most 1 free on one node ("a"); ' +
        'reserved GPUs 0, 1 on node "a", waiting for 1 busy GPU',
    },
  },
  {
    name: "gives a multi-GPU job the lowest free indices",
    nodes: [node("a", "B..B..")],
    queue: [job("j", 3)],
    assignments: [["j", "a", [1, 2, 4]]],
    waiting: [],
  },
  // Best fit
  {
    name: "prefers the node left with the fewest free GPUs",
    nodes: [node("a", "...."), node("b", "..BB"), node("c", ".BBB")],
    queue: [job("two", 2), job("one", 1)],
    assignments: [["two", "b", [0, 1]], ["one", "c", [0]]],
    waiting: [],
  },
  {
    name: "breaks best-fit ties by node id",
    nodes: [node("b", ".."), node("a", "..")],
    queue: [job("j", 1)],
    assignments: [["j", "a", [0]]],
    waiting: [],
  },
  // Node constraint
  {
    name: "places a pinned job on its node even when another fits better",
    nodes: [node("a", "."), node("b", "...")],
    queue: [job("pinned", 1, { node: "b" }), job("free", 1)],
    assignments: [["pinned", "b", [0]], ["free", "a", [0]]],
    waiting: [],
  },
  {
    name: "keeps a pinned job waiting when its node is full, even if others are free",
    nodes: [node("a", ".."), node("b", "B")],
    queue: [job("pinned", 1, { node: "b" }), job("other", 1)],
    assignments: [["other", "a", [0]]],
    reservation: { job_id: "pinned", node_id: "b", gpu_indices: [0] },
    waiting: ["pinned"],
  },
  {
    name: "keeps a job pinned to an unknown or offline node waiting without a reservation",
    nodes: [node("a", "B"), node("off", "..", { online: false })],
    queue: [job("ghost", 1, { node: "nope" }), job("down", 1, { node: "off" }), job("j", 1)],
    assignments: [],
    reservation: { job_id: "j", node_id: "a", gpu_indices: [0] },
    waiting: ["ghost", "down", "j"],
    reasons: {
      ghost: 'Cannot place job "ghost": node "nope" is unknown',
      down: 'Cannot place job "down": node "off" is offline',
    },
  },
  // CPU-only jobs
  {
    name: "limits CPU-only jobs by free CPU slots and never gives them GPUs",
    nodes: [node("a", "BB", { cpu_slots: 2, cpu_running: 1 })],
    queue: [job("c1", 0), job("c2", 0)],
    assignments: [["c1", "a", []]],
    waiting: ["c2"],
    reasons: { c2: 'Cannot place job "c2": needs a CPU slot, all 2 CPU slots are in use' },
  },
  {
    name: "spreads CPU-only jobs to the node with the most free CPU slots",
    nodes: [node("a", "", { cpu_slots: 1 }), node("b", "", { cpu_slots: 3, cpu_running: 1 })],
    queue: [job("c1", 0), job("c2", 0), job("c3", 0), job("c4", 0)],
    assignments: [["c1", "b", []], ["c2", "a", []], ["c3", "b", []]],
    waiting: ["c4"],
  },
  {
    name: "runs CPU-only jobs beside GPU jobs without taking their slots",
    nodes: [node("a", ".", { cpu_slots: 1 })],
    queue: [job("cpu", 0), job("gpu", 1)],
    assignments: [["cpu", "a", []], ["gpu", "a", [0]]],
    waiting: [],
  },
  {
    name: "keeps a pinned CPU-only job waiting when its node has no CPU slot",
    nodes: [node("a", "", { cpu_slots: 1, cpu_running: 1 }), node("b", "")],
    queue: [job("c", 0, { node: "a" })],
    assignments: [],
    waiting: ["c"],
    reasons: { c: 'Cannot place job "c": needs a CPU slot, node "a" has 1 of 1 CPU slot in use' },
  },
  // Offline nodes
  {
    name: "gives offline nodes nothing",
    nodes: [node("a", "....", { online: false }), node("b", ".")],
    queue: [job("j1", 1), job("j2", 1), job("c", 0, { node: "a" })],
    assignments: [["j1", "b", [0]]],
    reservation: { job_id: "j2", node_id: "b", gpu_indices: [0] },
    waiting: ["j2", "c"],
  },
  {
    name: "keeps everything waiting when no node is online",
    nodes: [node("a", "..", { online: false })],
    queue: [job("g", 1), job("c", 0)],
    assignments: [],
    reservation: null,
    waiting: ["g", "c"],
    reasons: {
      g: 'Cannot place job "g": needs 1 GPU, no node is online',
      c: 'Cannot place job "c": needs a CPU slot, no node is online',
    },
  },
  // Head reservation and backfill
  {
    name: "keeps the head job's reservation when a smaller job could fit",
    nodes: [node("a", ".B"), node("b", "BB")],
    queue: [job("head", 2), job("small", 1)],
    assignments: [],
    reservation: { job_id: "head", node_id: "a", gpu_indices: [0, 1] },
    waiting: ["head", "small"],
    reasons: {
      small: 'Cannot place job "small": needs 1 GPU, at most 0 free on one node; ' +
        '1 free GPU on node "a" held for job "head"',
    },
  },
  {
    name: "backfills smaller jobs on nodes the head job did not reserve",
    nodes: [node("a", ".."), node("b", ".BB")],
    queue: [job("head", 3), job("s1", 1), job("s2", 1), job("s3", 1)],
    assignments: [["s1", "a", [0]], ["s2", "a", [1]]],
    reservation: { job_id: "head", node_id: "b", gpu_indices: [0, 1, 2] },
    waiting: ["head", "s3"],
  },
  {
    name: "backfills CPU-only jobs on the reserved node",
    nodes: [node("a", ".B", { cpu_slots: 1 })],
    queue: [job("head", 2), job("cpu", 0)],
    assignments: [["cpu", "a", []]],
    reservation: { job_id: "head", node_id: "a", gpu_indices: [0, 1] },
    waiting: ["head"],
  },
  {
    name: "reserves the node with the most free GPUs among those large enough",
    nodes: [node("big", "BBBBBBBB"), node("mid", ".BB"), node("tiny", "..")],
    queue: [job("head", 3), job("s", 1)],
    assignments: [["s", "tiny", [0]]],
    reservation: { job_id: "head", node_id: "mid", gpu_indices: [0, 1, 2] },
    waiting: ["head"],
  },
  {
    name: "reserves only for the first job that cannot start; later ones just wait",
    nodes: [node("a", ".B"), node("b", "B.")],
    queue: [job("h1", 2), job("h2", 2)],
    assignments: [],
    reservation: { job_id: "h1", node_id: "a", gpu_indices: [0, 1] },
    waiting: ["h1", "h2"],
    reasons: {
      h2: 'Cannot place job "h2": needs 2 GPUs, at most 1 free on one node ("b"); ' +
        '1 free GPU on node "a" held for job "h1"',
    },
  },
  {
    name: "reserves a pinned head job's own node",
    nodes: [node("a", ".B"), node("b", "BB")],
    queue: [job("head", 2, { node: "b" }), job("s", 1)],
    assignments: [["s", "a", [0]]],
    reservation: { job_id: "head", node_id: "b", gpu_indices: [0, 1] },
    waiting: ["head"],
  },
  // Impossible jobs
  {
    name: "does not let a job that can never fit take the reservation",
    nodes: [node("gpu-0", "."), node("gpu-1", "BB")],
    queue: [job("j-42", 4), job("j-43", 2), job("j-44", 1)],
    assignments: [["j-44", "gpu-0", [0]]],
    reservation: { job_id: "j-43", node_id: "gpu-1", gpu_indices: [0, 1] },
    waiting: ["j-42", "j-43"],
    reasons: {
      "j-42": 'Cannot place job "j-42": needs 4 GPUs, the largest online node "gpu-1" has 2',
    },
  },
  {
    name: "counts only online nodes when judging whether a job can ever fit",
    nodes: [node("big", "........", { online: false }), node("small", "..")],
    queue: [job("j", 4)],
    assignments: [],
    reservation: null,
    waiting: ["j"],
    reasons: { j: 'Cannot place job "j": needs 4 GPUs, the largest online node "small" has 2' },
  },
  {
    name: "does not reserve for a job pinned to a node too small for it",
    nodes: [node("a", "."), node("b", "....")],
    queue: [job("j", 2, { node: "a" })],
    assignments: [],
    reservation: null,
    waiting: ["j"],
    reasons: { j: 'Cannot place job "j": needs 2 GPUs, node "a" has 1' },
  },
  {
    name: "rejects a GPU count that is not a whole number ≥ 0",
    nodes: [node("a", "..")],
    queue: [job("neg", -1), job("frac", 0.5)],
    assignments: [],
    reservation: null,
    waiting: ["neg", "frac"],
    reasons: {
      neg: 'Cannot place job "neg": gpus must be a whole number ≥ 0, got -1',
      frac: 'Cannot place job "frac": gpus must be a whole number ≥ 0, got 0.5',
    },
  },
  // Foreign processes
  {
    name: "treats a GPU with foreign processes as busy on a node that avoids them",
    nodes: [node("a", "x.", { avoid_foreign_gpus: true })],
    queue: [job("j1", 1), job("j2", 1)],
    assignments: [["j1", "a", [1]]],
    // It waits for j1's GPU rather than the foreign one: gpuctl knows j1 will end.
    reservation: { job_id: "j2", node_id: "a", gpu_indices: [1] },
    waiting: ["j2"],
  },
  {
    name: "ignores foreign processes on a node that does not avoid them",
    nodes: [node("a", "x.", { avoid_foreign_gpus: false })],
    queue: [job("j1", 1), job("j2", 1)],
    assignments: [["j1", "a", [0]], ["j2", "a", [1]]],
    waiting: [],
  },
  {
    name: "reserves busy gpuctl GPUs before foreign-used ones, which may never free",
    nodes: [node("a", "x.B", { avoid_foreign_gpus: true })],
    queue: [job("head", 2)],
    assignments: [],
    reservation: { job_id: "head", node_id: "a", gpu_indices: [1, 2] },
    waiting: ["head"],
  },
  {
    name: "reserves a node whose gpuctl jobs can free enough GPUs over one blocked by foreign use",
    nodes: [
      node("a", ".xx", { avoid_foreign_gpus: true }),
      node("b", "BBB", { avoid_foreign_gpus: true }),
    ],
    queue: [job("head", 2)],
    assignments: [],
    reservation: { job_id: "head", node_id: "b", gpu_indices: [0, 1] },
    waiting: ["head"],
  },
  // Reasons
  {
    name: "updates waiting reasons as capacity is used up during the pass",
    nodes: [node("a", ".B"), node("b", ".")],
    queue: [job("h", 2), job("w1", 2), job("s", 1), job("w2", 2)],
    assignments: [["s", "b", [0]]],
    reservation: { job_id: "h", node_id: "a", gpu_indices: [0, 1] },
    waiting: ["h", "w1", "w2"],
    reasons: {
      h: 'Cannot place job "h": needs 2 GPUs, at most 1 free on one node ("a"); ' +
        'reserved GPUs 0, 1 on node "a", waiting for 1 busy GPU',
      w1: 'Cannot place job "w1": needs 2 GPUs, at most 1 free on one node ("b"); ' +
        '1 free GPU on node "a" held for job "h"',
      w2: 'Cannot place job "w2": needs 2 GPUs, at most 0 free on one node; ' +
        '1 free GPU on node "a" held for job "h"',
    },
  },
  {
    name: "keeps reasons of pinned and unpinned jobs with the same GPU count apart",
    nodes: [node("a", "B"), node("b", "BB")],
    queue: [job("h", 2), job("p", 1, { node: "a" }), job("q", 1), job("e", 1, { node: "" })],
    assignments: [],
    waiting: ["h", "p", "q", "e"],
    reasons: {
      p: 'Cannot place job "p": needs 1 GPU, node "a" has 0 free',
      q: 'Cannot place job "q": needs 1 GPU, at most 0 free on one node',
      e: 'Cannot place job "e": node "" is unknown',
    },
  },
  {
    name: "places nothing and reserves nothing for an empty queue",
    nodes: [node("a", "..")],
    queue: [],
    assignments: [],
    reservation: null,
    waiting: [],
  },
];

for (const c of cases) {
  Deno.test(`placeJobs() ${c.name}`, () => {
    const jobs = queue(...c.queue);
    const p = placeJobs(jobs, c.nodes);
    checkPlacement(jobs, c.nodes, p);
    replayPlacement(jobs, c.nodes, p);
    const assignments: Assignment[] = c.assignments.map(([job_id, node_id, gpu_indices]) => ({
      job_id,
      node_id,
      gpu_indices,
    }));
    deepStrictEqual(p.assignments, assignments);
    if (c.reservation !== undefined) deepStrictEqual(p.reservation, c.reservation);
    deepStrictEqual(p.waiting.map((w) => w.job_id), c.waiting);
    for (const [id, reason] of Object.entries(c.reasons ?? {})) {
      deepStrictEqual(p.waiting.find((w) => w.job_id === id)?.reason, reason);
    }
  });
}

Deno.test("placeJobs() does not change its inputs", () => {
  const jobs = queue(job("b", 1, { priority: 0 }), job("a", 2, { priority: 9 }));
  const nodes = [node("n", ".B.")];
  const before = JSON.stringify({ jobs, nodes });
  placeJobs(jobs, nodes);
  deepStrictEqual(JSON.stringify({ jobs, nodes }), before);
});
