import { assertEquals } from "../../tests/assert.ts";
import type { JobSubmission } from "../../protocol/rest/jobs.ts";
import { jobs as jobsDb, nodes as nodesDb } from "../db/mod.ts";
import { emitEvent } from "../events/emit.ts";
import { cancelJob, listJobs, submitJob } from "../jobs/service.ts";
import { dispatchJob, markRunning } from "../jobs/transitions.ts";
import { ingestBatch } from "../runs/service.ts";
import { testContext } from "../runs/_test_context.ts";
import type { Context } from "../context.ts";
import { getStatus } from "./service.ts";

function addNode(ctx: Context, id: string, gpus: number, status: "ONLINE" | "OFFLINE") {
  nodesDb.upsertNode(ctx.db, {
    id,
    hostname: id,
    status,
    gpus: Array.from({ length: gpus }, (_, i) => ({
      index: i,
      uuid: `GPU-${id}-${i}`,
      name: "H100",
      memory_total_mb: 81920,
    })),
    cpu_count: 8,
    memory_mb: 64000,
    disk_free_mb: 1000,
    labels: {},
    agent_version: "0.1.0",
    cpu_slots: 2,
    avoid_foreign_gpus: false,
    fake_gpus: true,
    last_heartbeat_at: ctx.now().toISOString(),
  }, ctx.now().toISOString());
}

const job = (name: string, gpus: number, more: Partial<JobSubmission> = {}): JobSubmission => ({
  name,
  command: ["python", "train.py"],
  working_dir: "/srv",
  gpus,
  ...more,
});

/** Starts a submitted job on `node` with the given GPUs, as the scheduler and agent would. */
function run(ctx: Context, jobId: string, node: string, gpus: number[]): string {
  return ctx.db.tx(() => {
    const { run_id } = dispatchJob(ctx, jobsDb.getJob(ctx.db, jobId)!, node, gpus);
    markRunning(ctx, jobsDb.getJob(ctx.db, jobId)!, 1, ctx.now());
    return run_id;
  });
}

Deno.test("getStatus() counts nodes, busy GPUs of online nodes, and jobs by state", () => {
  const ctx = testContext();
  addNode(ctx, "a", 4, "ONLINE");
  addNode(ctx, "b", 2, "OFFLINE");
  const running = submitJob(ctx, job("long", 2, { max_steps: 1000 })).id;
  run(ctx, running, "a", [0, 1]);
  submitJob(ctx, job("next", 4));
  const cancelled = submitJob(ctx, job("never", 1)).id;
  cancelJob(ctx, cancelled, "ana");

  const s = getStatus(ctx);
  assertEquals(s.nodes, { online: 1, offline: 1, total: 2 });
  assertEquals(s.gpus, { busy: 2, total: 4 });
  assertEquals(s.jobs, { queued: 1, dispatched: 0, running: 1 });
  assertEquals(s.queue.map((q) => [q.name, q.gpus]), [["next", 4]]);
});

Deno.test("getStatus() forecasts a queued job's start from the progress of the run it waits for", () => {
  const ctx = testContext();
  addNode(ctx, "a", 2, "ONLINE");
  const running = submitJob(ctx, job("long", 2, { max_steps: 400 })).id;
  const runId = run(ctx, running, "a", [0, 1]);
  const queued = submitJob(ctx, job("next", 1)).id;
  // The clock moves a second a call: the step-100 batch lands some seconds after the start.
  ingestBatch(ctx, runId, { points: [{ key: "loss", step: 100, value: 1 }], step: 100 });

  const s = getStatus(ctx);
  const started = Date.parse(jobsDb.getJob(ctx.db, running)!.started_at!);
  const now = Date.parse(s.generated_at);
  const expected = now + (now - started) / 100 * 300;
  assertEquals(s.queue[0].job_id, queued);
  assertEquals(Date.parse(s.queue[0].estimated_start_at!), Math.round(expected));
  assertEquals(s.queue[0].estimated_node, "a");
});

Deno.test("getStatus() lists the queue in the scheduler's order: priority, then submission", () => {
  const ctx = testContext();
  addNode(ctx, "a", 1, "ONLINE");
  submitJob(ctx, job("low", 1));
  submitJob(ctx, job("high", 1, { priority: 5 }));
  submitJob(ctx, job("low-2", 1));
  const s = getStatus(ctx);
  assertEquals(s.queue.map((q) => q.name), ["high", "low", "low-2"]);
  // One GPU: the first starts now, the others have no forecast (no run with a known end).
  assertEquals(s.queue.map((q) => q.estimated_start_at === null), [false, true, true]);
  assertEquals(listJobs(ctx, { status: "QUEUED" }).items.length, 3);
});

Deno.test("getStatus() counts warning and critical events of the last day as alerts", () => {
  const ctx = testContext();
  const raise = (severity: "info" | "warning" | "critical", message: string) =>
    ctx.db.tx(() => emitEvent(ctx, { type: "LOSS_SPIKE", severity, message }));
  raise("warning", "spike");
  raise("critical", "nan");
  raise("info", "fine");
  const s = getStatus(ctx);
  assertEquals([s.alerts.warning, s.alerts.critical], [1, 1]);
  assertEquals(s.alerts.recent.map((e) => e.message), ["nan", "spike"]);
});
