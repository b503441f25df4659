import { assert, assertEquals, assertThrows } from "../../tests/assert.ts";
import type { HelloFrame } from "../../protocol/agent.ts";
import { events as eventsDb, jobs as jobsDb, nodes as nodesDb } from "../db/mod.ts";
import { NotFoundError } from "../errors.ts";
import { cancelJob, submitJob } from "../jobs/service.ts";
import { dispatchJob, markRunning } from "../jobs/transitions.ts";
import { testContext } from "../runs/_test_context.ts";
import type { Context } from "../context.ts";
import {
  failVanishedAttempt,
  getNode,
  judgeOwnedProcess,
  listNodes,
  markNodeOffline,
  pendingCancel,
  registerNode,
} from "./service.ts";

function hello(node_id: string, more: Partial<HelloFrame> = {}): HelloFrame {
  return {
    type: "hello",
    node_id,
    hostname: `${node_id}.lan`,
    agent_version: "0.1.0",
    gpus: [{ index: 0, uuid: "GPU-0", name: "H100", memory_total_mb: 81920 }],
    fake_gpus: false,
    cpu_count: 8,
    memory_mb: 64000,
    disk_free_mb: 1000,
    labels: {},
    cpu_slots: 2,
    avoid_foreign_gpus: false,
    running: [],
    fence_after_s: 60,
    ...more,
  };
}

const types = (ctx: Context) =>
  eventsDb.listEvents(ctx.db, {}, 100).items.map((e) => e.type).reverse();

/** A job running on `node` at attempt 1. */
function runningJob(ctx: Context, node: string): string {
  const id = submitJob(ctx, {
    name: "train",
    command: ["python", "train.py"],
    working_dir: "/srv",
    gpus: 1,
  }).id;
  ctx.db.tx(() => {
    dispatchJob(ctx, jobsDb.getJob(ctx.db, id)!, node, [0]);
    markRunning(ctx, jobsDb.getJob(ctx.db, id)!, 7, ctx.now());
  });
  return id;
}

/** The process an agent reports for a job's current attempt. */
const owned = (ctx: Context, id: string) => ({
  job_id: id,
  attempt: 1,
  run_id: jobsDb.getJob(ctx.db, id)!.run_id!,
  pid: 7,
  state: "RUNNING" as const,
});

Deno.test("listNodes() and getNode() answer what the agents reported; an unknown id is NotFound", () => {
  const ctx = testContext();
  assertEquals(listNodes(ctx), { items: [], next_cursor: null });
  registerNode(ctx, hello("gpu-1"));
  assertEquals(listNodes(ctx).items.map((n) => n.id), ["gpu-1"]);
  assertEquals(getNode(ctx, "gpu-1").gpus[0].name, "H100");
  const err = assertThrows(() => getNode(ctx, "gpu-9"), '"gpu-9"');
  assert(err instanceof NotFoundError);
});

Deno.test("registerNode() raises NODE_ONLINE when a node comes online, not on every hello", () => {
  const ctx = testContext();
  registerNode(ctx, hello("gpu-1"));
  registerNode(ctx, hello("gpu-1"));
  assertEquals(types(ctx), ["NODE_ONLINE"]);
  assertEquals(nodesDb.fenceAfterOf(ctx.db, "gpu-1"), 60);
});

Deno.test("markNodeOffline() loses the node's attempts with their hold, once", () => {
  const ctx = testContext();
  registerNode(ctx, hello("gpu-1"));
  const id = runningJob(ctx, "gpu-1");
  const until = new Date("2026-01-01T01:00:00Z");
  markNodeOffline(ctx, "gpu-1", 95, () => ({ until }));
  markNodeOffline(ctx, "gpu-1", 100, () => ({ until }));
  assertEquals(getNode(ctx, "gpu-1").status, "OFFLINE");
  const job = jobsDb.getJob(ctx.db, id)!;
  assertEquals([job.status, job.attempt, job.not_before], ["QUEUED", 2, until.toISOString()]);
  assertEquals(types(ctx).filter((t) => t === "NODE_OFFLINE").length, 1);
});

Deno.test("registerNode() gives a lost attempt back to the node that still runs it", () => {
  const ctx = testContext();
  registerNode(ctx, hello("gpu-1"));
  const id = runningJob(ctx, "gpu-1");
  markNodeOffline(ctx, "gpu-1", 95, () => ({ until: null, why: "no lease" }));
  assertEquals(jobsDb.getJob(ctx.db, id)!.status, "LOST");
  registerNode(
    ctx,
    hello("gpu-1", { running: [owned(ctx, id)] }),
  );
  assertEquals(jobsDb.getJob(ctx.db, id)!.status, "RUNNING");
});

Deno.test("judgeOwnedProcess() kills copies the server did not give the node and resends cancels", () => {
  const ctx = testContext();
  registerNode(ctx, hello("gpu-1"));
  const id = runningJob(ctx, "gpu-1");
  const p = owned(ctx, id);
  assertEquals(judgeOwnedProcess(ctx, "gpu-1", p), null);
  assertEquals(judgeOwnedProcess(ctx, "gpu-2", p), {
    stale: `job "${id}" is RUNNING at attempt 1 on gpu-1`,
  });
  assertEquals(judgeOwnedProcess(ctx, "gpu-1", { ...p, job_id: "j-none" }), {
    stale: "the job does not exist",
  });
  cancelJob(ctx, id, "ana");
  const pending = pendingCancel(ctx, id)!;
  assertEquals([pending.node_id, pending.cancel.type, pending.cancel.attempt], [
    "gpu-1",
    "cancel",
    1,
  ]);
  assertEquals(judgeOwnedProcess(ctx, "gpu-1", p), { cancel: pending.cancel });
  // Already stopping: the agent has the cancel.
  assertEquals(judgeOwnedProcess(ctx, "gpu-1", { ...p, state: "STOPPING" }), null);
});

Deno.test("failVanishedAttempt() ends the attempt as AGENT_RESTART unless it moved on", () => {
  const ctx = testContext();
  registerNode(ctx, hello("gpu-1"));
  const id = runningJob(ctx, "gpu-1");
  failVanishedAttempt(ctx, "gpu-1", { id, attempt: 2 }, 2); // not the live attempt: nothing
  assertEquals(jobsDb.getJob(ctx.db, id)!.status, "RUNNING");
  failVanishedAttempt(ctx, "gpu-1", { id, attempt: 1 }, 2);
  const job = jobsDb.getJob(ctx.db, id)!;
  assertEquals([job.status, job.attempt], ["QUEUED", 2]);
  assert(job.reason!.includes("AGENT_RESTART"), job.reason!);
});
