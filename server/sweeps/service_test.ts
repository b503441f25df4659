import { assert, assertEquals, assertThrows } from "../../tests/assert.ts";
import type { SweepCreate } from "../../protocol/sweeps.ts";
import { jobs as jobsDb } from "../db/mod.ts";
import { dispatchJob, endAttempt, markRunning } from "../jobs/transitions.ts";
import { ingestBatch } from "../runs/service.ts";
import { testContext } from "../runs/_test_context.ts";
import type { Context } from "../context.ts";
import { advanceSweeps, cancelSweep, createSweep, getSweep } from "./service.ts";

const base = {
  name: "train",
  command: ["python", "train.py", "--steps", "100"],
  working_dir: "/srv",
  gpus: 1,
};

function sweep(more: Partial<SweepCreate> = {}): SweepCreate {
  return {
    name: "lr",
    project: "nlp",
    base,
    parameters: { lr: { values: [0.1, 0.01, 0.001] } },
    metric: "eval/loss",
    ...more,
  };
}

/** Starts a trial's job as the scheduler and its agent would; returns the run id. */
function start(ctx: Context, jobId: string): string {
  return ctx.db.tx(() => {
    const { run_id } = dispatchJob(ctx, jobsDb.getJob(ctx.db, jobId)!, "n1", [0]);
    markRunning(ctx, jobsDb.getJob(ctx.db, jobId)!, 1, ctx.now());
    return run_id;
  });
}

function log(ctx: Context, runId: string, step: number, value: number) {
  ingestBatch(ctx, runId, { points: [{ key: "eval/loss", step, value }], step });
}

function finish(ctx: Context, jobId: string) {
  ctx.db.tx(() =>
    endAttempt(ctx, jobsDb.getJob(ctx.db, jobId)!, {
      outcome: "SUCCEEDED",
      failure_class: null,
      exit_code: 0,
      reason: "exited with code 0",
      at: ctx.now(),
    })
  );
}

Deno.test("createSweep() submits at most max_parallel trials, each with its parameters appended", () => {
  const ctx = testContext();
  const s = createSweep(ctx, sweep({ max_parallel: 2 }));
  assertEquals(s.trials.map((t) => t.status), ["QUEUED", "QUEUED", "PENDING"]);
  const job = jobsDb.getJob(ctx.db, s.trials[0].job_id!)!;
  assertEquals(job.command, ["python", "train.py", "--steps", "100", "--lr", "0.1"]);
  assertEquals(job.config, { lr: 0.1, sweep_id: s.id, sweep_trial: 1 });
  assertEquals([job.project, job.name], ["nlp", "lr #1 lr=0.1"]);
  assertEquals(s.metric, { key: "eval/loss", direction: "min" });
});

Deno.test("advanceSweeps() starts the next trial when one ends, and ends the sweep with its best", () => {
  const ctx = testContext();
  const s = createSweep(ctx, sweep({ max_parallel: 2 }));
  const [a, b] = s.trials.map((t) => t.job_id!);
  const ra = start(ctx, a);
  const rb = start(ctx, b);
  log(ctx, ra, 100, 0.4);
  log(ctx, rb, 100, 0.2);
  finish(ctx, a);
  assertEquals(advanceSweeps(ctx), { launched: 1, stopped: 0, finished: 0 });
  const c = getSweep(ctx, s.id).trials[2].job_id!;
  const rc = start(ctx, c);
  log(ctx, rc, 100, 0.9);
  finish(ctx, b);
  finish(ctx, c);
  assertEquals(advanceSweeps(ctx).finished, 1);
  const done = getSweep(ctx, s.id);
  assertEquals(done.status, "SUCCEEDED");
  assertEquals(done.best, { index: 1, params: { lr: 0.01 }, run_id: rb, value: 0.2, step: 100 });
  assertEquals(done.counts, { SUCCEEDED: 3 });
  assert(done.summary.includes("best so far: trial 2 (lr=0.01)"), done.summary);
  assertEquals(done.next_actions[0].tool, "get_best_checkpoint");
});

Deno.test("advanceSweeps() stops the trials below the best half at a rung, with the rung in the reason", () => {
  const ctx = testContext();
  const s = createSweep(
    ctx,
    sweep({
      parameters: { lr: { values: [0.5, 0.1, 0.05, 0.01] } },
      early_stop: { min_steps: 10, every: 10, keep_fraction: 0.5 },
    }),
  );
  const runs = s.trials.map((t) => start(ctx, t.job_id!));
  [0.9, 0.3, 0.5, 0.7].forEach((v, i) => log(ctx, runs[i], 10, v));
  assertEquals(advanceSweeps(ctx).stopped, 2);
  const view = getSweep(ctx, s.id);
  assertEquals(view.trials.map((t) => t.status), ["STOPPED", "RUNNING", "RUNNING", "STOPPED"]);
  assertEquals(view.trials[0].stopped_at, 10);
  const job = jobsDb.getJob(ctx.db, view.trials[0].job_id!)!;
  assert(job.cancel_requested, "the losing trial's job is being cancelled");
  assert(job.reason!.includes("stopped at rung 10: eval/loss 0.9"), job.reason!);
  // Judged once per rung: nothing more happens at rung 10 on the next pass.
  assertEquals(advanceSweeps(ctx).stopped, 0);
  // At rung 20 the two survivors meet; the worse one stops.
  log(ctx, runs[1], 20, 0.25);
  log(ctx, runs[2], 20, 0.1);
  assertEquals(advanceSweeps(ctx).stopped, 1);
  assertEquals(getSweep(ctx, s.id).trials[1].stopped_at, 20);
});

Deno.test("advanceSweeps() keeps the first trial to reach a rung and judges later ones against it", () => {
  const ctx = testContext();
  const s = createSweep(
    ctx,
    sweep({
      parameters: { lr: { values: [0.1, 0.01] } },
      early_stop: { min_steps: 10, every: 10, keep_fraction: 0.5 },
    }),
  );
  const [r0, r1] = s.trials.map((t) => start(ctx, t.job_id!));
  log(ctx, r0, 10, 0.8);
  assertEquals(advanceSweeps(ctx).stopped, 0);
  log(ctx, r1, 10, 0.9);
  assertEquals(advanceSweeps(ctx).stopped, 1);
  assertEquals(getSweep(ctx, s.id).trials.map((t) => t.status), ["RUNNING", "STOPPED"]);
});

Deno.test("createSweep() names the field a request gets wrong and stores nothing", () => {
  const ctx = testContext();
  assertThrows(
    () => createSweep(ctx, sweep({ parameters: { lr: { min: 0.1, max: 1 } } })),
    "parameters.lr.count: is required for a grid over a range",
  );
  assertThrows(() => createSweep(ctx, sweep({ metric: undefined })), "metric: is required");
  assertThrows(() => createSweep(ctx, sweep({ metric: "throughput" })), "higher or a lower");
  assertEquals(jobsDb.listJobs(ctx.db, {}, 10).items.length, 0);
});

Deno.test("cancelSweep() cancels queued trials and, unless told otherwise, running ones", () => {
  const ctx = testContext();
  const s = createSweep(ctx, sweep({ max_parallel: 2 }));
  start(ctx, s.trials[0].job_id!);
  const after = cancelSweep(ctx, s.id, "ana", { let_running_finish: true });
  assertEquals(after.status, "CANCELLED");
  assertEquals(jobsDb.getJob(ctx.db, s.trials[0].job_id!)!.cancel_requested, false);
  assertEquals(jobsDb.getJob(ctx.db, s.trials[1].job_id!)!.status, "CANCELLED");
  assertEquals(after.trials[2].status, "PENDING");
  assertEquals(advanceSweeps(ctx).launched, 0);
  assertThrows(() => cancelSweep(ctx, s.id, "ana"), "already ended CANCELLED");
});
