/** Evaluations of checkpoints through the API: queue an EVALUATE job, record its results. */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness, type Harness, withHarness } from "./_harness.ts";
import { jobs as jobsDb } from "../server/db/mod.ts";
import { dispatchJob, markRunning } from "../server/jobs/transitions.ts";
import { checkpointsWithEvaluations, failEvaluationsOfJob } from "../server/evaluations/mod.ts";

/** Places a queued job on a node and starts it, as the scheduler and agent would; its run id. */
function start(h: Harness, jobId: string, node = "gpu-1"): string {
  return h.ctx.db.tx(() => {
    const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, jobId)!, node, [0, 1]);
    markRunning(h.ctx, jobsDb.getJob(h.ctx.db, jobId)!, 4242, h.ctx.now());
    return run_id;
  });
}

async function log(h: Harness, runId: string, body: Record<string, unknown>) {
  const res = await h.call("POST", `/api/sdk/runs/${runId}/log`, { token: h.tokens.write, body });
  assertEquals(res.status, 200, res.text);
  return res.json;
}

/** A training job that ran on gpu-1 and registered a checkpoint at step 900; its ids. */
async function trainedCheckpoint(h: Harness) {
  await h.call("POST", "/api/projects", {
    body: { name: "nlp", eval_command: "python eval.py --ckpt $GPUCTL_CHECKPOINT_PATH" },
  });
  const job = (await h.call("POST", "/api/jobs", {
    body: {
      name: "bert",
      command: ["python", "train.py"],
      working_dir: "/srv/bert",
      gpus: 2,
      project: "nlp",
      experiment: "base",
      env: { HF_HOME: "/cache/hf" },
      priority: 3,
    },
  })).json;
  const runId = start(h, job.id);
  await log(h, runId, {
    points: [{ key: "eval/loss", step: 900, value: 0.4 }],
    checkpoints: [{ path: "/srv/bert/ckpt/step-900", step: 900 }],
  });
  const checkpoint = (await h.call("GET", `/api/runs/${runId}/checkpoints`)).json.items[0];
  return { job, runId, checkpoint };
}

Deno.test("an evaluation is queued as an EVALUATE job that inherits the training job", async () => {
  await withHarness(async (h) => {
    const { runId, checkpoint } = await trainedCheckpoint(h);
    const res = await h.call("POST", `/api/checkpoints/${checkpoint.id}/evaluations`, {
      token: h.tokens.write,
      body: { suite: "heldout" },
    });
    assertEquals(res.status, 201, res.text);
    const { evaluation, job } = res.json;
    assertEquals(
      [evaluation.status, evaluation.suite, evaluation.checkpoint_id, evaluation.job_id],
      ["QUEUED", "heldout", checkpoint.id, job.id],
    );
    const stored = (await h.call("GET", `/api/jobs/${job.id}`)).json;
    assertEquals(
      [stored.kind, stored.status, stored.working_dir, stored.gpus, stored.node, stored.priority],
      ["EVALUATE", "QUEUED", "/srv/bert", 2, "gpu-1", 3],
    );
    assertEquals([stored.command, stored.shell, stored.project, stored.experiment], [
      "python eval.py --ckpt $GPUCTL_CHECKPOINT_PATH",
      true,
      "nlp",
      "base",
    ]);
    assertEquals(stored.env, {
      HF_HOME: "/cache/hf",
      GPUCTL_CHECKPOINT_PATH: "/srv/bert/ckpt/step-900",
      GPUCTL_CHECKPOINT_ID: checkpoint.id,
      GPUCTL_EVALUATION_ID: evaluation.id,
      GPUCTL_EVAL_SUITE: "heldout",
      GPUCTL_EVAL_OUTPUT: `/srv/bert/.gpuctl/eval-${evaluation.id}.json`,
    });
    const list = await h.call("GET", `/api/checkpoints/${checkpoint.id}/evaluations`, {
      token: h.tokens.read,
    });
    assertEquals(list.json.items.map((e: { id: string }) => e.id), [evaluation.id]);
    assertEquals(checkpointsWithEvaluations(h.ctx, runId)[0].evaluations[0].id, evaluation.id);
  });
});

Deno.test("results logged by the evaluation job complete it with an EVALUATION_COMPLETED event", async () => {
  let clock = Date.parse("2026-03-01T10:00:00.000Z");
  const h = await createHarness({ now: () => new Date(clock) });
  try {
    const { runId, checkpoint } = await trainedCheckpoint(h);
    const { evaluation, job } =
      (await h.call("POST", `/api/checkpoints/${checkpoint.id}/evaluations`, {
        body: { suite: "heldout" },
      })).json;
    const evalRun = start(h, job.id);
    const running = await h.call("GET", `/api/evaluations/${evaluation.id}`);
    assertEquals(running.json.status, "RUNNING");

    clock += 90_000;
    await log(h, evalRun, { evaluation: { metrics: { "eval/loss": 0.31, accuracy: 0.88 } } });
    const done = (await h.call("GET", `/api/evaluations/${evaluation.id}`)).json;
    assertEquals([done.status, done.metrics, done.duration_s], [
      "COMPLETED",
      { "eval/loss": 0.31, accuracy: 0.88 },
      90,
    ]);
    assertEquals(done.finished_at, "2026-03-01T10:01:30.000Z");

    const events = (await h.call("GET", `/api/events?run_id=${runId}&type=EVALUATION_COMPLETED`))
      .json.items;
    assertEquals(events.length, 1);
    assertStringIncludes(events[0].message, `"heldout" of checkpoint ${checkpoint.id}`);
    // The training run's primary metric (eval/loss) is the headline.
    assertStringIncludes(events[0].message, "eval/loss = 0.31");
    assertEquals(events[0].data.headline, { key: "eval/loss", value: 0.31 });
    assertEquals(events[0].job_id, job.id);

    // More results later (the job's JSON file, forwarded by the agent) merge without a second event.
    await log(h, evalRun, { evaluation: { metrics: { f1: 0.7 } } });
    const merged = (await h.call("GET", `/api/evaluations/${evaluation.id}`)).json;
    assertEquals(merged.metrics, { "eval/loss": 0.31, accuracy: 0.88, f1: 0.7 });
    const again = await h.call("GET", `/api/events?type=EVALUATION_COMPLETED`);
    assertEquals(again.json.items.length, 1);
  } finally {
    await h.close();
  }
});

Deno.test("an evaluation whose job ends without results is marked FAILED", async () => {
  await withHarness(async (h) => {
    const { runId, checkpoint } = await trainedCheckpoint(h);
    const { evaluation, job } =
      (await h.call("POST", `/api/checkpoints/${checkpoint.id}/evaluations`, {
        body: { suite: "heldout" },
      })).json;
    const evalRun = start(h, job.id);
    const failed = h.ctx.db.tx(() => failEvaluationsOfJob(h.ctx, job.id, "exited with code 1"));
    assertEquals(failed, 1);
    assertEquals(h.ctx.db.tx(() => failEvaluationsOfJob(h.ctx, job.id, "again")), 0);
    assertEquals((await h.call("GET", `/api/evaluations/${evaluation.id}`)).json.status, "FAILED");
    const events = (await h.call("GET", `/api/events?run_id=${runId}&type=EVALUATION_FAILED`))
      .json.items;
    assertEquals(events.length, 1);
    assertStringIncludes(events[0].message, "exited with code 1");
    // Results that still arrive win over the failure.
    await log(h, evalRun, { evaluation: { metrics: { accuracy: 0.5 } } });
    assertEquals(
      (await h.call("GET", `/api/evaluations/${evaluation.id}`)).json.status,
      "COMPLETED",
    );
  });
});

Deno.test("an SDK run's checkpoint is evaluated with the given working_dir and command", async () => {
  await withHarness(async (h) => {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "solo", name: "r" } }))
      .json;
    await log(h, run.id, { checkpoints: [{ path: "/home/me/ck.pt", step: 5 }] });
    const checkpoint = (await h.call("GET", `/api/runs/${run.id}/checkpoints`)).json.items[0];
    const path = `/api/checkpoints/${checkpoint.id}/evaluations`;

    const noDir = await h.call("POST", path, { body: { suite: "s", command: "python ev.py" } });
    assertEquals(noDir.status, 400);
    assertStringIncludes(noDir.json.error.message, "working_dir: is required");
    const noCommand = await h.call("POST", path, { body: { suite: "s", working_dir: "/home/me" } });
    assertEquals(noCommand.status, 400);
    assertStringIncludes(noCommand.json.error.message, "command: is required");
    assertEquals(noCommand.json.error.details[0].field, "command");
    assertEquals((await h.call("GET", "/api/jobs")).json.items.length, 0);

    const ok = await h.call("POST", path, {
      body: { suite: "s", command: ["python", "ev.py"], working_dir: "/home/me", gpus: 1 },
    });
    assertEquals(ok.status, 201, ok.text);
    assertEquals([ok.json.job.gpus, ok.json.job.node, ok.json.job.shell], [1, null, false]);
  });
});

Deno.test("bad evaluation requests get a 4xx naming the problem and change nothing", async () => {
  await withHarness(async (h) => {
    const { checkpoint } = await trainedCheckpoint(h);
    const jobsBefore = (await h.call("GET", "/api/jobs")).json.items.length;
    const unknown = await h.call("POST", "/api/checkpoints/c-nope/evaluations", {
      body: { suite: "heldout" },
    });
    assertEquals(unknown.status, 404);
    assertStringIncludes(unknown.json.error.message, 'Checkpoint "c-nope" does not exist');
    const noSuite = await h.call("POST", `/api/checkpoints/${checkpoint.id}/evaluations`, {
      body: { command: "python eval.py" },
    });
    assertEquals(noSuite.status, 400);
    assertStringIncludes(noSuite.json.error.message, "suite");
    assertEquals(noSuite.json.error.details[0].field, "suite");
    const extra = await h.call("POST", `/api/checkpoints/${checkpoint.id}/evaluations`, {
      body: { suite: "s", gpu: 1 },
    });
    assertEquals(extra.status, 400);
    const readOnly = await h.call("POST", `/api/checkpoints/${checkpoint.id}/evaluations`, {
      token: h.tokens.read,
      body: { suite: "s" },
    });
    assertEquals(readOnly.status, 403);
    assertEquals((await h.call("GET", "/api/jobs")).json.items.length, jobsBefore);
    const listUnknown = await h.call("GET", "/api/checkpoints/c-nope/evaluations");
    assertEquals(listUnknown.status, 404);
    assertEquals((await h.call("GET", "/api/evaluations/ev-nope")).status, 404);
  });
});

Deno.test("evaluation results from a run with no evaluation record are ignored, the rest stored", async () => {
  await withHarness(async (h) => {
    const { runId } = await trainedCheckpoint(h);
    const r = await log(h, runId, {
      points: [{ key: "eval/loss", step: 950, value: 0.35 }],
      evaluation: { metrics: { accuracy: 0.9 } },
    });
    assertEquals(r.accepted.points, 1);
    const events = await h.call("GET", "/api/events?type=EVALUATION_COMPLETED");
    assertEquals(events.json.items.length, 0);
    assert((await h.call("GET", `/api/runs/${runId}`)).json.step === 950);
  });
});

Deno.test("an evaluation job gets the training job's secret values, and shows them masked", async () => {
  await withHarness(async (h) => {
    await h.call("POST", "/api/projects", { body: { name: "nlp", eval_command: "python e.py" } });
    const train = (await h.call("POST", "/api/jobs", {
      body: {
        name: "bert",
        command: ["python", "train.py"],
        working_dir: "/srv/bert",
        gpus: 0,
        project: "nlp",
        env: { HF_TOKEN: "hf_real_value", DATA_URL: "s3://bucket?sig=abc" },
        secret_env: ["DATA_URL"],
      },
    })).json;
    const runId = start(h, train.id);
    await log(h, runId, { checkpoints: [{ path: "/srv/bert/ckpt/step-1", step: 1 }] });
    const checkpoint = (await h.call("GET", `/api/runs/${runId}/checkpoints`)).json.items[0];
    const res = await h.call("POST", `/api/checkpoints/${checkpoint.id}/evaluations`, {
      body: { suite: "heldout" },
    });
    assertEquals(res.status, 201, res.text);
    const shown = res.json.job;
    assertEquals([shown.env.HF_TOKEN, shown.env.DATA_URL, shown.secret_env], [
      "••••••",
      "••••••",
      ["DATA_URL"],
    ]);
    const stored = jobsDb.getJob(h.ctx.db, shown.id)!;
    assertEquals([stored.env.HF_TOKEN, stored.env.DATA_URL], [
      "hf_real_value",
      "s3://bucket?sig=abc",
    ]);
  });
});
