/** The semantic layer through the API: diagnosis, comparisons, recommendation, failures. */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { type Harness, withHarness } from "./_harness.ts";
import { createGatewayHarness, eventually, FakeAgent } from "./_fake_agent.ts";
import { jobs as jobsDb } from "../server/db/mod.ts";
import { emitEvent } from "../server/events/emit.ts";
import { dispatchJob, endAttempt, markRunning } from "../server/jobs/transitions.ts";

const T0 = Date.parse("2026-02-01T12:00:00.000Z");

async function sdkRun(h: Harness, body: Record<string, unknown>): Promise<string> {
  const res = await h.call("POST", "/api/sdk/runs", {
    token: h.tokens.write,
    body: { project: "nlp", experiment: "base", ...body },
  });
  assertEquals(res.status, 201, res.text);
  return res.json.id;
}

async function log(h: Harness, runId: string, body: Record<string, unknown>) {
  const res = await h.call("POST", `/api/sdk/runs/${runId}/log`, { token: h.tokens.write, body });
  assertEquals(res.status, 200, res.text);
}

/** `n` points of `key` from step 0, one every `every` steps, `secondsPerStep` apart. */
function points(key: string, values: (number | string)[], every = 1, secondsPerStep = 0.5) {
  return values.map((value, i) => ({
    key,
    step: i * every,
    value,
    wall_time: T0 / 1000 + i * every * secondsPerStep,
  }));
}

/** Submits a job and starts it on a node as the scheduler and agent would; its run id. */
async function startedJob(h: Harness, name: string): Promise<{ jobId: string; runId: string }> {
  const job = (await h.call("POST", "/api/jobs", {
    body: { name, command: ["python", "train.py"], working_dir: "/w", gpus: 1, project: "nlp" },
  })).json;
  const runId = h.ctx.db.tx(() => {
    const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, job.id)!, "gpu-1", [0]);
    markRunning(h.ctx, jobsDb.getJob(h.ctx.db, job.id)!, 77, h.ctx.now());
    return run_id;
  });
  return { jobId: job.id, runId };
}

function endJob(h: Harness, jobId: string, outcome: "SUCCEEDED" | "FAILED", exitCode: number) {
  h.ctx.db.tx(() =>
    endAttempt(h.ctx, jobsDb.getJob(h.ctx.db, jobId)!, {
      outcome,
      failure_class: outcome === "FAILED" ? "OOM" : null,
      exit_code: exitCode,
      reason: `exited with code ${exitCode}`,
      at: h.ctx.now(),
    })
  );
}

Deno.test("diagnose_run reports rate, ETA, trend and a LOSS_NAN event of a running run", async () => {
  await withHarness(async (h) => {
    const id = await sdkRun(h, { name: "synthetic", max_steps: 1000 });
    const loss = Array.from({ length: 201 }, (_, i) => 3 / (1 + i / 25));
    await log(h, id, {
      points: [
        ...points("train/loss", loss),
        ...points("sys/gpu0/util", loss.map(() => 80)),
        ...points("sys/gpu1/util", loss.map(() => 60)),
      ],
    });
    // As the rules would raise it.
    h.ctx.db.tx(() =>
      emitEvent(h.ctx, {
        type: "LOSS_NAN",
        severity: "critical",
        run_id: id,
        message: 'Loss "train/loss" is NaN at step 150',
        data: { key: "train/loss", step: 150, value: "NaN" },
      })
    );
    const res = await h.call("GET", `/api/runs/${id}/diagnosis`, { token: h.tokens.read });
    assertEquals(res.status, 200, res.text);
    const d = res.json;
    assertEquals([d.status, d.progress.step, d.progress.max_steps], ["RUNNING", 200, 1000]);
    assertEquals(d.rate.steps_per_s, 2);
    assertEquals(d.eta.remaining_steps, 800);
    assertEquals(d.eta.seconds, 400);
    assertEquals(d.eta.at, new Date(T0 + 200 * 500 + 2000 + 400_000).toISOString());
    assertEquals(d.primary_metric.key, "train/loss");
    assertEquals(d.primary_metric.trend.verdict, "improving");
    assert(d.primary_metric.trend.change < 0);
    assertEquals(d.gpu.mean_util, 70);
    assertEquals(d.anomalies.map((a: { type: string }) => a.type), ["LOSS_NAN"]);
    assertStringIncludes(d.summary, "LOSS_NAN");
    assertStringIncludes(d.summary, "about 6m 40s left");
    assertEquals(d.next_actions.map((a: { tool: string }) => a.tool), ["get_logs", "wait_for_run"]);

    assertEquals((await h.call("GET", "/api/runs/r-nope/diagnosis")).status, 404);
  }, { now: () => new Date(T0 + 200 * 500 + 2000) });
});

Deno.test("compare_runs ranks min and max metrics and shows the config diff", async () => {
  await withHarness(async (h) => {
    const ids: string[] = [];
    const runs = [
      { lr: 0.1, loss: [1.0, 0.6, 0.5], acc: [0.5, 0.7, 0.72] },
      { lr: 0.01, loss: [1.0, 0.4, 0.3], acc: [0.5, 0.8, 0.85] },
      { lr: 0.001, loss: [1.0, 0.8, 0.7], acc: [0.5, 0.6, 0.9] },
    ];
    for (const [i, r] of runs.entries()) {
      const id = await sdkRun(h, {
        name: `lr-${r.lr}`,
        config: { lr: r.lr, model: { layers: 12, dropout: i === 2 ? 0.2 : 0.1 }, seed: 1 },
      });
      await log(h, id, { points: [...points("eval/loss", r.loss), ...points("eval/acc", r.acc)] });
      ids.push(id);
    }
    const byLoss = await h.call("GET", `/api/runs/compare?runs=${ids.join(",")}`, {
      token: h.tokens.read,
    });
    assertEquals(byLoss.status, 200, byLoss.text);
    assertEquals(byLoss.json.metric, { key: "eval/loss", direction: "min" });
    assertEquals(byLoss.json.ranking, [ids[1], ids[0], ids[2]]);
    assertEquals(byLoss.json.runs[1].best, 0.3);
    assertEquals(byLoss.json.runs[1].best_step, 2);
    assertEquals(byLoss.json.config_diff, [
      { key: "lr", values: { [ids[0]]: 0.1, [ids[1]]: 0.01, [ids[2]]: 0.001 } },
      { key: "model.dropout", values: { [ids[0]]: 0.1, [ids[1]]: 0.1, [ids[2]]: 0.2 } },
    ]);
    assertEquals(byLoss.json.identical_config_keys, 2);
    assertEquals(byLoss.json.next_actions[0].args, { run_id: ids[1] });

    const byAcc = await h.call("GET", `/api/runs/compare?runs=${ids.join(",")}&metric=eval/acc`);
    assertEquals(byAcc.json.metric, { key: "eval/acc", direction: "max" });
    assertEquals(byAcc.json.ranking, [ids[2], ids[1], ids[0]]);
    assertStringIncludes(byAcc.json.summary, "higher is better");

    const unknown = await h.call("GET", `/api/runs/compare?runs=${ids[0]},r-ghost`);
    assertEquals(unknown.status, 404);
    assertStringIncludes(unknown.json.error.message, '"r-ghost"');
    const one = await h.call("GET", `/api/runs/compare?runs=${ids[0]}`);
    assertEquals(one.status, 400);
    assertStringIncludes(one.json.error.message, "runs");
    const same = await h.call("GET", `/api/runs/compare?runs=${ids[0]},${ids[0]}`);
    assertEquals(same.status, 400);
  });
});

Deno.test("get_best_checkpoint prefers an evaluated checkpoint over a better training-time one", async () => {
  await withHarness(async (h) => {
    const id = await sdkRun(h, { name: "bert" });
    await log(h, id, {
      points: points("train/loss", [2, 1.5, 1.2, 1.0, 0.8, 0.6, 0.5, 0.4, 0.3, 0.2], 100),
      checkpoints: [
        { path: "/ck/step-300", step: 300 },
        { path: "/ck/step-900", step: 900 },
      ],
    });
    const [early, late] = (await h.call("GET", `/api/runs/${id}/checkpoints`)).json.items;
    assertEquals([early.metrics["train/loss"], late.metrics["train/loss"]], [1.0, 0.2]);

    // Before any evaluation the training metric decides.
    const byTrain = (await h.call("GET", `/api/checkpoints:recommend?run=${id}`)).json;
    assertEquals([byTrain.checkpoint.checkpoint_id, byTrain.basis], [late.id, "training_metric"]);
    assertEquals(byTrain.next_actions[0].tool, "evaluate_checkpoint");

    // Evaluate the early checkpoint only: the evaluation job reports through the SDK endpoint.
    const queued = await h.call("POST", `/api/checkpoints/${early.id}/evaluations`, {
      body: { suite: "heldout", command: "python eval.py", working_dir: "/w" },
    });
    assertEquals(queued.status, 201, queued.text);
    const evalRun = h.ctx.db.tx(() => {
      const job = jobsDb.getJob(h.ctx.db, queued.json.job.id)!;
      return dispatchJob(h.ctx, job, "gpu-1", []).run_id;
    });
    await log(h, evalRun, { evaluation: { metrics: { accuracy: 0.81 } } });

    const res = await h.call("GET", `/api/checkpoints:recommend?run=${id}`, {
      token: h.tokens.read,
    });
    assertEquals(res.status, 200, res.text);
    const rec = res.json;
    assertEquals(rec.checkpoint.checkpoint_id, early.id);
    assertEquals([rec.basis, rec.metric, rec.direction, rec.suite, rec.value], [
      "evaluation",
      "accuracy",
      "max",
      "heldout",
      0.81,
    ]);
    assertStringIncludes(rec.reason, "preferred over the training-time metric");
    assertEquals(rec.alternatives[0].checkpoint_id, late.id);
    assertEquals(rec.considered, { checkpoints: 2, evaluated: 1 });

    const byExperiment = (await h.call("GET", "/api/checkpoints:recommend?experiment=nlp/base"))
      .json;
    assertEquals(byExperiment.checkpoint.checkpoint_id, early.id);
    assertEquals(byExperiment.scope, { experiment: "nlp/base" });

    const compared = (await h.call("GET", `/api/runs/${id}/checkpoints:compare`)).json;
    assertEquals(compared.basis, "evaluation");
    assertEquals(compared.checkpoints.map((c: { checkpoint_id: string }) => c.checkpoint_id), [
      early.id,
      late.id,
    ]);
    assertEquals(compared.checkpoints[0].evaluations[0].metrics, { accuracy: 0.81 });

    assertEquals((await h.call("GET", "/api/checkpoints:recommend")).status, 400);
    assertEquals(
      (await h.call("GET", "/api/checkpoints:recommend?experiment=nlp/nope")).status,
      404,
    );
    assertEquals((await h.call("GET", "/api/checkpoints:recommend?run=r-nope")).status, 404);
  });
});

Deno.test("explain_failure names a CUDA OOM with the evidence line of a failed job", async () => {
  await withHarness(async (h) => {
    const { jobId, runId } = await startedJob(h, "big-batch");
    await log(h, runId, {
      logs: [
        { seq: 1, text: "epoch 1 step 10 loss 2.3" },
        { seq: 2, text: "Traceback (most recent call last):" },
        { seq: 3, text: '  File "train.py", line 42, in <module>' },
        {
          seq: 4,
          text: "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB " +
            "(GPU 0; 23.65 GiB total capacity)",
        },
      ],
      checkpoints: [{ path: "/w/ck/step-5", step: 5 }],
    });
    endJob(h, jobId, "FAILED", 1);
    const res = await h.call("GET", `/api/runs/${runId}/failure`, { token: h.tokens.read });
    assertEquals(res.status, 200, res.text);
    const x = res.json;
    assertEquals([x.status, x.cause_id, x.retry], ["FAILED", "cuda_oom", "fails_again"]);
    assertStringIncludes(x.likely_cause, "out of memory");
    assertEquals(x.evidence[0].line_no, 4);
    assert(x.suggested_fixes.length > 0);
    assertEquals(x.next_actions.map((a: { tool: string }) => a.tool), [
      "retry_job",
      "evaluate_checkpoint",
      "get_logs",
    ]);
    assertEquals(x.next_actions[0].args, { job_id: jobId });

    const diagnosis = (await h.call("GET", `/api/runs/${runId}/diagnosis`)).json;
    assertEquals(diagnosis.failure.cause_id, "cuda_oom");
    assertEquals(diagnosis.next_actions[0].tool, "explain_failure");
  });
});

Deno.test("explain_failure answers 409 for a run that did not fail", async () => {
  await withHarness(async (h) => {
    const { jobId, runId } = await startedJob(h, "fine");
    endJob(h, jobId, "SUCCEEDED", 0);
    const res = await h.call("GET", `/api/runs/${runId}/failure`);
    assertEquals(res.status, 409);
    assertEquals(res.json.error.code, "Conflict");
    assertStringIncludes(res.json.error.message, "it is SUCCEEDED, not FAILED or LOST");
    assertEquals((await h.call("GET", "/api/runs/r-nope/failure")).status, 404);
  });
});

Deno.test("diagnose_run reads the newest points of a long, unevenly logged series", async () => {
  await withHarness(async (h) => {
    const id = await sdkRun(h, { name: "long" });
    // 3000 points every 10 steps, then 100 points every step at 10 steps/s.
    const sparse = Array.from({ length: 3000 }, (_, i) => ({
      key: "loss",
      step: i * 10,
      value: 5,
      wall_time: T0 / 1000 + i,
    }));
    const dense = Array.from({ length: 100 }, (_, i) => ({
      key: "loss",
      step: 30_000 + i,
      value: 1 - i / 200,
      wall_time: T0 / 1000 + 3000 + i / 10,
    }));
    await log(h, id, { points: [...sparse, ...dense] });
    const d = (await h.call("GET", `/api/runs/${id}/diagnosis`)).json;
    assertEquals(d.primary_metric.trend.window, { from_step: 30_050, to_step: 30_099, points: 50 });
    assertEquals(d.primary_metric.trend.verdict, "improving");
    assertEquals(Math.round(d.rate.steps_per_s), 10);
  }, { now: () => new Date(T0 + 10_000_000) });
});

Deno.test("a checkpoint path saved again by a later run is marked overwritten: recommend skips it, evaluating it is 409", async () => {
  await withHarness(async (h) => {
    const first = await startedJob(h, "synthetic-a");
    const second = await startedJob(h, "synthetic-b");
    const path = "/w/checkpoints/ckpt-100.pt";
    await log(h, first.runId, {
      points: points("train/loss", [1, 0.5], 100),
      checkpoints: [{ path, step: 100, size_bytes: 1000, mtime: T0 / 1000 }],
    });
    const [before] = (await h.call("GET", `/api/runs/${first.runId}/checkpoints`)).json.items;
    assertEquals([before.overwritten, before.size_bytes, before.mtime], [
      false,
      1000,
      new Date(T0).toISOString(),
    ]);
    // The second job, started in the same working dir on the same node, writes the same file.
    await log(h, second.runId, {
      points: points("train/loss", [2, 1.8], 100),
      checkpoints: [{ path, step: 100, size_bytes: 1000, mtime: T0 / 1000 + 60 }],
    });
    const [lost] = (await h.call("GET", `/api/runs/${first.runId}/checkpoints`)).json.items;
    assertEquals([lost.overwritten, lost.overwritten_by_run], [true, second.runId]);
    const [kept] = (await h.call("GET", `/api/runs/${second.runId}/checkpoints`)).json.items;
    assertEquals(kept.overwritten, false);
    const events = (await h.call("GET", `/api/events?run_id=${first.runId}`)).json.items;
    const overwrittenEvent = events.find((e: { type: string }) =>
      e.type === "CHECKPOINT_OVERWRITTEN"
    );
    assert(overwrittenEvent, JSON.stringify(events.map((e: { type: string }) => e.type)));
    assertStringIncludes(overwrittenEvent.message, `was overwritten by run ${second.runId}`);

    const rec = (await h.call("GET", `/api/checkpoints:recommend?run=${first.runId}`)).json;
    assertEquals(rec.checkpoint, null);
    assertEquals(rec.skipped.map((s: { checkpoint_id: string }) => s.checkpoint_id), [lost.id]);
    assertStringIncludes(rec.reason, `overwritten by run ${second.runId}`);
    assertStringIncludes(rec.summary, "No checkpoint to recommend");
    const compared = (await h.call("GET", `/api/runs/${first.runId}/checkpoints:compare`)).json;
    assertEquals(compared.checkpoints[0].rank, null);
    assertStringIncludes(compared.checkpoints[0].excluded, `run ${second.runId}`);
    assertEquals(
      (await h.call("GET", `/api/checkpoints:recommend?run=${second.runId}`)).json.checkpoint
        .checkpoint_id,
      kept.id,
    );

    const evaluate = await h.call("POST", `/api/checkpoints/${lost.id}/evaluations`, {
      body: { suite: "heldout", command: "python eval.py" },
    });
    assertEquals(evaluate.status, 409, evaluate.text);
    assertStringIncludes(evaluate.json.error.message, `run ${second.runId} saved to the same path`);
    assertEquals(
      (await h.call("GET", "/api/jobs")).json.items.filter((j: { kind: string }) =>
        j.kind === "EVALUATE"
      ),
      [],
    );
  });
});

Deno.test("the same path on another host, or the very same file seen again, is not overwritten", async () => {
  await withHarness(async (h) => {
    const onA = await sdkRun(h, { name: "a", env: { hostname: "host-a" } });
    const onB = await sdkRun(h, { name: "b", env: { hostname: "host-b" } });
    const sameFile = await sdkRun(h, { name: "c", env: { hostname: "host-a" } });
    const c = { path: "/data/ckpt.pt", step: 5, size_bytes: 10, mtime: T0 / 1000 };
    for (const id of [onA, onB, sameFile]) await log(h, id, { checkpoints: [c] });
    for (const id of [onA, onB, sameFile]) {
      const [ck] = (await h.call("GET", `/api/runs/${id}/checkpoints`)).json.items;
      assertEquals(ck.overwritten, false, id);
    }
  });
});

Deno.test("get_best_checkpoint never recommends a checkpoint saved at or after the run's LOSS_NAN", async () => {
  await withHarness(async (h) => {
    const id = await sdkRun(h, { name: "diverged" });
    await log(h, id, {
      points: points("train/loss", [2, 1, 0.5, 0.1], 100),
      checkpoints: [{ path: "/ck/a", step: 100 }, { path: "/ck/b", step: 300 }],
    });
    h.ctx.db.tx(() =>
      emitEvent(h.ctx, {
        type: "LOSS_NAN",
        severity: "critical",
        run_id: id,
        message: 'Loss "train/loss" is NaN at step 250',
        data: { key: "train/loss", step: 250, value: "NaN" },
      })
    );
    const rec = (await h.call("GET", `/api/checkpoints:recommend?run=${id}`)).json;
    assertEquals(rec.checkpoint.step, 100);
    assertEquals(rec.skipped.map((s: { step: number }) => s.step), [300]);
    assertStringIncludes(rec.reason, "at or after the run's LOSS_NAN at step 250");
    assertStringIncludes(rec.summary, "Use ");
  });
});

Deno.test("checkpoint frames from one node's agent for the same path mark the earlier job's checkpoint overwritten", async () => {
  const h = await createGatewayHarness();
  try {
    const agent = await FakeAgent.connect(h.base, h.tokens.agent);
    agent.hello();
    await agent.until((a) => a.of("ack").length === 2);
    const refs = [];
    for (const name of ["a", "b"]) {
      const job = (await h.call("POST", "/api/jobs", {
        body: { name, command: ["python", "train.py"], working_dir: "/w", gpus: 1 },
      })).json;
      await agent.until((a) => a.of("dispatch").some((d) => d.job.job_id === job.id));
      const d = agent.of("dispatch").find((f) => f.job.job_id === job.id)!.job;
      refs.push({ job_id: job.id, attempt: 1, run_id: d.run_id });
    }
    const path = "/w/checkpoints/ckpt-100.pt";
    refs.forEach((ref, i) => {
      agent.jobState(ref, "RUNNING", { pid: 40 + i });
      agent.data({
        type: "checkpoint",
        ...ref,
        checkpoint: { path, step: 100, size_bytes: 64, mtime: T0 / 1000 + i },
      });
    });
    const [first, second] = refs.map((r) => r.run_id);
    const lost = await eventually(async () => {
      const [c] = (await h.call("GET", `/api/runs/${first}/checkpoints`)).json.items;
      return c?.overwritten ? c : null;
    });
    assertEquals([lost.overwritten_by_run, lost.mtime], [second, new Date(T0).toISOString()]);
    const [kept] = (await h.call("GET", `/api/runs/${second}/checkpoints`)).json.items;
    assertEquals([kept.overwritten, kept.size_bytes], [false, 64]);
    await agent.close();
  } finally {
    await h.stop();
  }
});

Deno.test("a run that saves the path again after the run that overwrote it owns the file again", async () => {
  await withHarness(async (h) => {
    const [a, b] = [await sdkRun(h, { name: "a" }), await sdkRun(h, { name: "b" })];
    const save = (id: string, at: number) =>
      log(h, id, { checkpoints: [{ path: "/w/last.pt", step: 1, mtime: T0 / 1000 + at }] });
    const state = async (id: string) => {
      const [c] = (await h.call("GET", `/api/runs/${id}/checkpoints`)).json.items;
      return [c.overwritten, c.overwritten_by_run];
    };
    await save(a, 1);
    await save(b, 2);
    assertEquals([await state(a), await state(b)], [[true, b], [false, null]]);
    await save(a, 3);
    assertEquals([await state(a), await state(b)], [[false, null], [true, a]]);
  });
});
