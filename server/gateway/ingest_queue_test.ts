/**
 * Group commit: frames of several nodes in one transaction, each reported (acked) only after
 * the commit that holds it; bounds; a frame failing alone; a commit that fails.
 */
import { assert, assertEquals } from "../../tests/assert.ts";
import type { DataFrame, DispatchSpec } from "../../protocol/agent.ts";
import { type Context, createContext } from "../context.ts";
import { openDatabase } from "../db/mod.ts";
import { pointsAfter } from "../db/metrics.ts";
import { submitJob } from "../jobs/service.ts";
import { registerNode } from "../nodes/service.ts";
import { SchedulerLoop } from "../scheduler/loop.ts";
import { applyDataFrame } from "./apply_frame.ts";
import { type FrameResult, GROUP_DELAY_MS, IngestQueue } from "./ingest_queue.ts";

interface Ref {
  node: string;
  job_id: string;
  attempt: number;
  run_id: string;
}

/** A store with `n` nodes, each running one job (its RUNNING frame applied as seq 1). */
function world(n: number): { ctx: Context; refs: Ref[]; commits: () => number } {
  const ctx = createContext({
    db: openDatabase(":memory:"),
    backupDir: "/nonexistent",
    seriesCache: false,
  });
  const dispatched: { node: string; spec: DispatchSpec }[] = [];
  const nodes = Array.from({ length: n }, (_, i) => `n${i}`);
  const scheduler = new SchedulerLoop(ctx, {
    connectedNodes: () => new Set(nodes),
    foreignMemory: () => new Map(),
    sendDispatch: (node, spec) => {
      dispatched.push({ node, spec });
      return true;
    },
  });
  for (const node of nodes) {
    registerNode(ctx, {
      type: "hello",
      node_id: node,
      hostname: node,
      agent_version: "test",
      gpus: [],
      fake_gpus: true,
      cpu_count: 1,
      memory_mb: 1000,
      disk_free_mb: 100_000,
      labels: {},
      cpu_slots: 1,
      avoid_foreign_gpus: false,
      running: [],
    });
    submitJob(ctx, { name: node, command: ["true"], working_dir: "/tmp", gpus: 0 });
  }
  scheduler.runOnce();
  const refs = dispatched.map(({ node, spec }) => {
    const ref = { node, job_id: spec.job_id, attempt: spec.attempt, run_id: spec.run_id };
    applyDataFrame(ctx, node, {
      type: "job_state",
      stream: "data",
      seq: 1,
      job_id: ref.job_id,
      attempt: ref.attempt,
      run_id: ref.run_id,
      state: "RUNNING",
      pid: 1,
      ts: 1,
    });
    return ref;
  });
  assertEquals(refs.length, n);
  let commits = 0;
  ctx.db.beforeCommit(() => commits++);
  return { ctx, refs, commits: () => commits };
}

const metrics = (
  r: Ref,
  seq: number,
  steps: number[],
  key = "loss",
): Extract<DataFrame, { type: "metrics" }> => ({
  type: "metrics",
  stream: "data",
  seq,
  job_id: r.job_id,
  attempt: r.attempt,
  run_id: r.run_id,
  points: steps.map((step) => ({ key, step, value: step, wall_time: step })),
});

/** A queue flushed by hand (`flush()`) unless a group fills up. */
function manualQueue(ctx: Context, opts: { maxFrames?: number; maxItems?: number } = {}) {
  let scheduled = 0;
  /** The flushes asked for and not yet run, with their delays. */
  const waiting: { flush: () => void; ms: number }[] = [];
  const q = new IngestQueue(ctx, {
    ...opts,
    schedule: (flush, ms) => {
      scheduled++;
      waiting.push({ flush, ms });
    },
  });
  /** Runs the flushes asked for so far, as the event loop would; returns their delays. */
  const runScheduled = () => waiting.splice(0).map(({ flush, ms }) => (flush(), ms));
  return { q, scheduled: () => scheduled, runScheduled };
}

Deno.test("frames of several nodes go into one transaction, each reported only after its commit", () => {
  const { ctx, refs, commits } = world(3);
  const { q, scheduled } = manualQueue(ctx);
  const reports: { node: string; seq: number; inTx: boolean; stored: number }[] = [];
  const before = commits();
  for (const [i, r] of refs.entries()) {
    for (let s = 0; s < 2; s++) {
      const seq = 2 + s;
      q.add(r.node, metrics(r, seq, [10 * i + s]), (result) => {
        assert("outcome" in result, "applied");
        reports.push({
          node: r.node,
          seq: result.outcome.ack!.seq,
          inTx: ctx.db.sqlite.isTransaction,
          stored: pointsAfter(ctx.db, r.run_id, 0, 100).length,
        });
      });
    }
  }
  // Nothing is applied or reported before the flush the queue asked for.
  assertEquals([reports.length, scheduled(), q.pending], [0, 1, 6]);
  q.flush();
  assertEquals(commits() - before, 1, "one transaction for the six frames");
  assertEquals(reports.length, 6);
  assert(reports.every((r) => !r.inTx), "reported after the COMMIT returned");
  // Each node's frames reported in order, both already stored when the first was reported.
  assertEquals(reports.map((r) => `${r.node}#${r.seq}:${r.stored}`), [
    "n0#2:2",
    "n0#3:2",
    "n1#2:2",
    "n1#3:2",
    "n2#2:2",
    "n2#3:2",
  ]);
  const lag = q.lag();
  assertEquals([lag.pending_frames, lag.oldest_pending_s], [0, 0]);
});

Deno.test("a group is bounded by frames and by points: a full group does not wait, but is written on a turn of its own", () => {
  const { ctx, refs, commits } = world(1);
  const r = refs[0];
  const { q, runScheduled } = manualQueue(ctx, { maxFrames: 3, maxItems: 5 });
  const done: number[] = [];
  const before = commits();
  q.add(r.node, metrics(r, 2, [1, 2]), () => done.push(2));
  q.add(r.node, metrics(r, 3, [3, 4]), () => done.push(3));
  assertEquals(done, []);
  assertEquals(runScheduled(), [GROUP_DELAY_MS], "a group not full waits for others");
  assertEquals([done, commits() - before], [[2, 3], 1]);
  for (let seq = 4; seq < 4 + 3; seq++) {
    q.add(r.node, metrics(r, seq, [seq + 1]), () => done.push(seq));
  }
  // The third frame fills the group: still nothing is written inside the socket's handler (a
  // burst of frames would hold the event loop transaction after transaction)...
  assertEquals([done, commits() - before], [[2, 3], 1]);
  // ...the flush it asks for does not wait.
  // ...the flush it asks for does not wait (the one asked for before it does nothing).
  assertEquals(runScheduled(), [GROUP_DELAY_MS, 0]);
  assertEquals([done, commits() - before], [[2, 3, 4, 5, 6], 2]);
  q.add(r.node, metrics(r, 7, [8, 9, 10]), () => done.push(7));
  q.add(r.node, metrics(r, 8, [11, 12, 13]), () => done.push(8));
  q.flush();
  // 3 + 3 points pass 5: two transactions.
  assertEquals([done, commits() - before], [[2, 3, 4, 5, 6, 7, 8], 4]);
  assertEquals(pointsAfter(ctx.db, r.run_id, 0, 100).length, 13);
});

Deno.test("a frame that fails for its own sake is undone alone; the others of its group are stored", () => {
  const { ctx, refs } = world(2);
  const { q } = manualQueue(ctx);
  // The store refuses points of key "boom" (a constraint error, not a store that cannot write).
  ctx.db.sqlite.exec(`CREATE TRIGGER refuse_boom BEFORE INSERT ON metric_points
    WHEN NEW.key = 'boom' BEGIN SELECT RAISE(ABORT, 'boom refused'); END`);
  const results: FrameResult[] = [];
  q.add(refs[0].node, metrics(refs[0], 2, [1]), (x) => results.push(x));
  // A run that is not the job's: refused, not an error.
  q.add(refs[1].node, { ...metrics(refs[1], 2, [1]), run_id: "r-nope" }, (x) => results.push(x));
  // A frame whose applying throws after it wrote a point and moved its cursor.
  const boom = metrics(refs[1], 3, [2]);
  boom.points.push({ key: "boom", step: 2, value: 1, wall_time: 2 });
  q.add(refs[1].node, boom, (x) => results.push(x));
  q.add(refs[1].node, metrics(refs[1], 4, [3]), (x) => results.push(x));
  q.add(refs[0].node, metrics(refs[0], 3, [2]), (x) => results.push(x));
  q.flush();
  assertEquals(results.map((x) => "outcome" in x ? x.outcome.applied : x.transient), [
    true,
    false,
    false, // failed, not transient: later frames go on
    true,
    true,
  ]);
  assert("outcome" in results[1] && results[1].outcome.refused?.includes("r-nope"));
  assertEquals(pointsAfter(ctx.db, refs[0].run_id, 0, 100).map((p) => p.step), [1, 2]);
  // Nothing of the failed frame stayed: its "loss" point at step 2 went with it.
  assertEquals(pointsAfter(ctx.db, refs[1].run_id, 0, 100).map((p) => [p.key, p.step]), [
    ["loss", 3],
  ]);
});

Deno.test("a commit that fails reports every frame of its group as failed, acks none, stores none; the next group is whole", () => {
  const { ctx, refs } = world(2);
  const { q } = manualQueue(ctx);
  let fail = true;
  ctx.db.beforeCommit(() => {
    if (fail) throw new Error("the store was closed under the transaction");
  });
  const results: FrameResult[] = [];
  for (const r of refs) q.add(r.node, metrics(r, 2, [1, 2]), (x) => results.push(x));
  q.flush();
  assertEquals(results.map((x) => "error" in x && x.transient), [true, true]);
  for (const r of refs) assertEquals(pointsAfter(ctx.db, r.run_id, 0, 100), []);
  fail = false;
  // The agents replay them (same seqs): applied now, once.
  for (const r of refs) q.add(r.node, metrics(r, 2, [1, 2]), (x) => results.push(x));
  q.flush();
  assertEquals(results.slice(2).map((x) => "outcome" in x && x.outcome.applied), [true, true]);
  for (const r of refs) {
    assertEquals(pointsAfter(ctx.db, r.run_id, 0, 100).map((p) => p.step), [1, 2]);
  }
  const seq = ctx.db.sqlite.prepare("SELECT value FROM sequences WHERE name = 'metric_points'")
    .get() as { value: number };
  assertEquals(seq.value, 4, "the failed group took no sequence numbers");
});

Deno.test("frames of a connection that gave up are dropped, not applied", () => {
  const { ctx, refs } = world(1);
  const r = refs[0];
  const { q } = manualQueue(ctx);
  let broken = false;
  const results: FrameResult[] = [];
  q.add(r.node, metrics(r, 2, [1]), (x) => {
    results.push(x);
    broken = true; // as the gateway does when a frame's connection fails
  }, () => broken);
  q.add(r.node, metrics(r, 3, [2]), (x) => results.push(x), () => broken);
  broken = true;
  q.flush();
  assertEquals(results, []);
  assertEquals(pointsAfter(ctx.db, r.run_id, 0, 100), []);
});

Deno.test("flushNode() stores one node's queued frames now; the others keep waiting, in order", () => {
  const { ctx, refs } = world(2);
  const { q } = manualQueue(ctx);
  const done: string[] = [];
  q.add(refs[1].node, metrics(refs[1], 2, [1]), () => done.push("n1#2"));
  q.add(refs[0].node, metrics(refs[0], 2, [1]), () => done.push("n0#2"));
  q.add(refs[1].node, metrics(refs[1], 3, [2]), () => done.push("n1#3"));
  q.add(refs[0].node, metrics(refs[0], 3, [2]), () => done.push("n0#3"));
  q.flushNode(refs[0].node);
  assertEquals([done, q.pending], [["n0#2", "n0#3"], 2]);
  assertEquals(pointsAfter(ctx.db, refs[1].run_id, 0, 100), []);
  q.flush();
  assertEquals(done, ["n0#2", "n0#3", "n1#2", "n1#3"]);
});
