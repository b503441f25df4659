import { deepStrictEqual, ok } from "node:assert/strict";
import { type NodeCapacity, placeJobs, type QueuedJob, type Reservation } from "./place_jobs.ts";
import { checkPlacement, replayPlacement } from "./_testing.ts";

interface Running {
  job_id: string;
  node_id: string;
  gpu_indices: number[];
  ends_at: number;
}

interface Round {
  round: number;
  started: Running[];
  reservation: Reservation | null;
}

/**
 * Runs scheduling passes round by round: jobs that end free their GPUs, new jobs arrive, one
 * pass places what it can, and placed jobs run for `duration` rounds.
 */
function simulate(opts: {
  nodes: Record<string, number>;
  running: Running[];
  arrivals: (round: number) => QueuedJob[];
  duration: (job: QueuedJob) => number;
  rounds: number;
}): Round[] {
  let running = opts.running.slice();
  const queue: QueuedJob[] = [];
  const history: Round[] = [];
  for (let round = 0; round < opts.rounds; round++) {
    running = running.filter((r) => r.ends_at > round);
    queue.push(...opts.arrivals(round));
    const nodes: NodeCapacity[] = Object.entries(opts.nodes).map(([id, count]) => ({
      id,
      online: true,
      cpu_slots: 2,
      cpu_running: 0,
      avoid_foreign_gpus: false,
      gpus: Array.from({ length: count }, (_, index) => ({
        index,
        busy: running.some((r) => r.node_id === id && r.gpu_indices.includes(index)),
      })),
    }));
    const placement = placeJobs(queue, nodes);
    checkPlacement(queue, nodes, placement);
    replayPlacement(queue, nodes, placement);
    const started: Running[] = [];
    for (const a of placement.assignments) {
      const i = queue.findIndex((j) => j.id === a.job_id);
      const [job] = queue.splice(i, 1);
      started.push({ ...a, ends_at: round + opts.duration(job) });
    }
    running.push(...started);
    history.push({ round, started, reservation: placement.reservation });
  }
  return history;
}

Deno.test("placeJobs() does not let a stream of 1-GPU jobs starve a 2-GPU job", () => {
  // Two 2-GPU nodes, every GPU busy with a job ending at a different round, so that without
  // a reservation each GPU that frees would go to the next 1-GPU job and no node would ever
  // have two free GPUs at once.
  let seq = 0;
  const small = (round: number, n: number): QueuedJob => ({
    id: `s${round}.${n}`,
    priority: 0,
    submit_seq: ++seq,
    gpus: 1,
  });
  const history = simulate({
    nodes: { a: 2, b: 2 },
    running: [
      { job_id: "old-a0", node_id: "a", gpu_indices: [0], ends_at: 1 },
      { job_id: "old-a1", node_id: "a", gpu_indices: [1], ends_at: 5 },
      { job_id: "old-b0", node_id: "b", gpu_indices: [0], ends_at: 2 },
      { job_id: "old-b1", node_id: "b", gpu_indices: [1], ends_at: 3 },
    ],
    arrivals: (round) => [
      ...(round === 0 ? [{ id: "big", priority: 0, submit_seq: ++seq, gpus: 2 }] : []),
      small(round, 1),
      small(round, 2),
    ],
    duration: (job) => (job.gpus === 2 ? 4 : 2),
    rounds: 8,
  });

  const bigStart = history.find((h) => h.started.some((s) => s.job_id === "big"));
  // GPU 1 of node "a", the last busy GPU the reservation waits for, frees at round 5.
  deepStrictEqual(bigStart?.round, 5);
  deepStrictEqual(bigStart?.started.find((s) => s.job_id === "big")?.gpu_indices, [0, 1]);

  for (const h of history.slice(0, 5)) {
    deepStrictEqual(
      h.reservation,
      { job_id: "big", node_id: "a", gpu_indices: [0, 1] },
      `round ${h.round}: the reservation holds node "a" for "big"`,
    );
    ok(
      h.started.every((s) => s.node_id !== "a"),
      `round ${h.round}: no 1-GPU job takes the free GPU 0 of reserved node "a"`,
    );
  }
  // Backfill kept going on node "b" while "big" waited, one start per GPU that freed there.
  deepStrictEqual(
    history.slice(0, 5).map((h) => h.started.map((s) => `${s.job_id}@${s.node_id}`)),
    [[], [], ["s0.1@b"], ["s0.2@b"], ["s1.1@b"]],
  );
  // Once "big" runs there is nothing to reserve for until the next 2-GPU job.
  ok(history.slice(6).every((h) => h.reservation?.job_id !== "big"));
});
