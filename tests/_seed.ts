/**
 * A database seeded the way a small lab's day leaves it, with a clock that moves only when
 * the seed says: a failed (OOM) job run with metrics, lines and a checkpoint, a running run,
 * a queued job, a succeeded SDK run, an evaluation and a warning event. The contract and
 * fuzz tests ask their questions of it.
 */
import { assert } from "./assert.ts";
import { createHarness, type Harness } from "./_harness.ts";
import { jobs as jobsDb, nodes as nodesDb } from "../server/db/mod.ts";
import { emitEvent } from "../server/events/emit.ts";
import { dispatchJob, endAttempt, markRunning } from "../server/jobs/transitions.ts";

/** The ids the seed made, for building requests. */
export interface Seed {
  /** A job's run that failed (OOM) after logging metrics, lines and a checkpoint. */
  failedRun: string;
  failedJob: string;
  /** A job's run still running, with metrics. */
  runningRun: string;
  runningJob: string;
  /** An SDK run that succeeded, in the same experiment. */
  sdkRun: string;
  checkpoint: string;
  evaluation: string;
  /** The EVALUATE job the evaluation queued. */
  evaluationJob: string;
  node: string;
  /** A grid sweep of two trials, one at a time: one trial queued, one pending. */
  sweep: string;
  /** An event of the running run. */
  eventId: number;
  /** The (admin) token the rows' requests are made with. */
  token: string;
}

const T0 = Date.parse("2026-03-01T09:00:00.000Z");

/** A harness whose clock moves only when the seed says, so each answer is reproducible. */
export async function seededHarness(): Promise<{ h: Harness; seed: Seed; tick: () => void }> {
  let clock = T0;
  const tick = () => {
    clock += 1000;
  };
  const h = await createHarness({ now: () => new Date(clock) });
  try {
    return { h, seed: await seed(h, tick), tick };
  } catch (err) {
    await h.close();
    throw err;
  }
}

async function ok(h: Harness, method: string, path: string, body?: unknown) {
  const res = await h.call(method, path, { body });
  assert(res.status < 300, `${method} ${path}: ${res.status} ${res.text}`);
  return res.json;
}

/** `n` points of `key` a second apart from the seed's start, one every `every` steps. */
function points(key: string, values: (number | string)[], every = 10) {
  return values.map((value, i) => ({
    key,
    step: i * every,
    value,
    wall_time: T0 / 1000 + i,
  }));
}

/** Places a queued job on the node and starts it, as the scheduler and agent would. */
function start(h: Harness, jobId: string, node: string): string {
  return h.ctx.db.tx(() => {
    const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, jobId)!, node, [0]);
    markRunning(h.ctx, jobsDb.getJob(h.ctx.db, jobId)!, 4242, h.ctx.now());
    return run_id;
  });
}

async function seed(h: Harness, tick: () => void): Promise<Seed> {
  const node = "gpu-1";
  nodesDb.upsertNode(h.ctx.db, {
    id: node,
    hostname: "gpu-1.lan",
    status: "ONLINE",
    gpus: [
      { index: 0, uuid: "GPU-a", name: "H100", memory_total_mb: 81920 },
      { index: 1, uuid: "GPU-b", name: "H100", memory_total_mb: 81920 },
    ],
    cpu_count: 32,
    memory_mb: 256000,
    disk_free_mb: 100000,
    labels: { rack: "a" },
    agent_version: "0.1.0",
    cpu_slots: 2,
    avoid_foreign_gpus: false,
    fake_gpus: false,
    last_heartbeat_at: h.ctx.now().toISOString(),
  }, h.ctx.now().toISOString());

  await ok(h, "POST", "/api/projects", {
    name: "nlp",
    description: "language models",
    eval_command: "python eval.py --ckpt $GPUCTL_CHECKPOINT_PATH",
  });
  await ok(h, "POST", "/api/projects", { name: "vision" });
  await ok(h, "POST", "/api/experiments", { project: "nlp", name: "base" });
  await ok(h, "POST", "/api/experiments", { project: "nlp", name: "empty" });
  await ok(h, "PUT", "/api/metric-definitions", {
    definitions: [
      { scope: "project", scope_id: "nlp", key: "train/loss", direction: "min", primary: true },
      { scope: "global", key: "eval/accuracy", direction: "max" },
    ],
  });
  tick();

  const submit = (name: string) =>
    ok(h, "POST", "/api/jobs", {
      name,
      command: ["python", "train.py"],
      working_dir: "/srv/bert",
      gpus: 1,
      project: "nlp",
      experiment: "base",
    });
  const failedJob = (await submit("bert-oom")).id;
  const runningJob = (await submit("bert-long")).id;
  await submit("bert-waiting");
  tick();
  const failedRun = start(h, failedJob, node);
  const runningRun = start(h, runningJob, node);
  tick();

  await ok(h, "POST", `/api/sdk/runs/${failedRun}/log`, {
    points: points("train/loss", [3, 2.1, 1.5, 1.2, 1.1]),
    checkpoints: [{ path: "/srv/bert/ckpt/step-40", step: 40 }],
    logs: [
      { seq: 0, stream: "stdout", text: "epoch 1" },
      { seq: 1, stream: "stderr", text: "torch.cuda.OutOfMemoryError: CUDA out of memory" },
    ],
    step: 40,
  });
  await ok(h, "POST", `/api/sdk/runs/${runningRun}/log`, {
    points: [
      ...points("train/loss", [3, 2.5, 2.2, 2.0, 1.9, 1.85]),
      ...points("sys/gpu0/util", [90, 92, 95, 91, 90, 93]),
    ],
    logs: [{ seq: 0, stream: "stdout", text: "step 50" }],
    step: 50,
  });
  tick();
  h.ctx.db.tx(() =>
    endAttempt(h.ctx, jobsDb.getJob(h.ctx.db, failedJob)!, {
      outcome: "FAILED",
      failure_class: "OOM",
      exit_code: 1,
      reason: "exited with code 1",
      at: h.ctx.now(),
    })
  );
  tick();

  const sdkRun = (await ok(h, "POST", "/api/sdk/runs", {
    project: "nlp",
    experiment: "base",
    name: "notebook",
    max_steps: 40,
  })).id;
  await ok(h, "POST", `/api/sdk/runs/${sdkRun}/log`, {
    points: [...points("train/loss", [2.8, 1.4, 0.9, 0.8, 0.75]), {
      key: "eval/accuracy",
      step: 40,
      value: 0.91,
      wall_time: T0 / 1000 + 5,
    }],
    checkpoints: [{ path: "/tmp/notebook/step-40", step: 40 }],
    status: "SUCCEEDED",
    step: 40,
  });
  tick();

  const checkpoint = (await ok(h, "GET", `/api/runs/${failedRun}/checkpoints`)).items[0].id;
  const queued = await ok(h, "POST", `/api/checkpoints/${checkpoint}/evaluations`, {
    suite: "glue",
  });
  tick();
  const sweep = (await ok(h, "POST", "/api/sweeps", {
    name: "bert-lr",
    project: "nlp",
    experiment: "base",
    base: { name: "bert", command: ["python", "train.py"], working_dir: "/srv/bert", gpus: 1 },
    parameters: { lr: { values: [0.001, 0.0001] } },
    max_parallel: 1,
  })).id;
  tick();
  const event = h.ctx.db.tx(() =>
    emitEvent(h.ctx, {
      type: "LOSS_SPIKE",
      severity: "warning",
      run_id: runningRun,
      job_id: runningJob,
      node_id: node,
      message: 'Loss "train/loss" jumped at step 30',
      data: { key: "train/loss", step: 30 },
    })
  );
  tick();
  return {
    failedRun,
    failedJob,
    runningRun,
    runningJob,
    sdkRun,
    checkpoint,
    evaluation: queued.evaluation.id,
    evaluationJob: queued.job.id,
    sweep,
    node,
    eventId: event.id,
    token: h.tokens.admin,
  };
}
