/**
 * A checkpoint's state through the API, as agents report it: a file written again by a retry,
 * a file gone, a file cut short. Recommend and evaluate take only valid ones and say why.
 */
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { type Harness, withHarness } from "./_harness.ts";
import { jobs as jobsDb } from "../server/db/mod.ts";
import { dispatchJob, markRunning } from "../server/jobs/transitions.ts";

const T0 = Date.parse("2026-02-01T12:00:00.000Z") / 1000;
const FP_A = "a".repeat(64);
const FP_B = "b".repeat(64);

/** Submits a job and starts it on node gpu-1 as the scheduler and agent would; its run id. */
async function startedJob(h: Harness, name: string): Promise<string> {
  const job = (await h.call("POST", "/api/jobs", {
    body: { name, command: ["python", "train.py"], working_dir: "/w", gpus: 1, project: "nlp" },
  })).json;
  return h.ctx.db.tx(() => {
    const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, job.id)!, "gpu-1", [0]);
    markRunning(h.ctx, jobsDb.getJob(h.ctx.db, job.id)!, 77, h.ctx.now());
    return run_id;
  });
}

async function log(h: Harness, runId: string, body: Record<string, unknown>) {
  const res = await h.call("POST", `/api/sdk/runs/${runId}/log`, { token: h.tokens.write, body });
  assertEquals(res.status, 200, res.text);
}

async function checkpoints(h: Harness, runId: string) {
  return (await h.call("GET", `/api/runs/${runId}/checkpoints`)).json.items as {
    id: string;
    path: string;
    step: number;
    state: string;
    problem: string | null;
    fingerprint: string | null;
  }[];
}

const loss = (steps: number[]) =>
  steps.map((step) => ({ key: "train/loss", step, value: 1 / (step + 1), wall_time: T0 + step }));

Deno.test("a path gone is marked gone on whichever run held it; a newer file there stays valid", async () => {
  await withHarness(async (h) => {
    const first = await startedJob(h, "a");
    const second = await startedJob(h, "b");
    const path = "/w/ckpt/epoch=0-step=7.ckpt";
    await log(h, first, {
      points: loss([7]),
      checkpoints: [{ path, step: 7, size_bytes: 10, mtime: T0, fingerprint: FP_A }],
    });
    // The second run's agent saw the file (from before its start) vanish.
    await log(h, second, { checkpoints: [{ path, size_bytes: 10, mtime: T0, state: "gone" }] });
    const [gone] = await checkpoints(h, first);
    assertEquals(gone.state, "gone");
    const rec = (await h.call("GET", `/api/checkpoints:recommend?run=${first}`)).json;
    assertEquals(rec.checkpoint, null);
    assertStringIncludes(rec.skipped[0].why, `gone: "${path}" no longer exists`);
    const evaluate = await h.call("POST", `/api/checkpoints/${gone.id}/evaluations`, {
      body: { suite: "heldout", command: "python eval.py" },
    });
    assertEquals(evaluate.status, 409, evaluate.text);
    assertStringIncludes(evaluate.json.error.message, "no longer exists");

    // Written again later by the second run; a late report of the old deletion changes nothing.
    await log(h, second, {
      points: loss([7]),
      checkpoints: [{ path, step: 7, size_bytes: 12, mtime: T0 + 60, fingerprint: FP_B }],
    });
    await log(h, second, { checkpoints: [{ path, size_bytes: 10, mtime: T0, state: "gone" }] });
    const [again] = await checkpoints(h, second);
    assertEquals([again.state, again.fingerprint], ["valid", FP_B]);
    assertEquals((await checkpoints(h, first))[0].state, "overwritten");
  });
});

Deno.test("an incomplete checkpoint is listed with why, raises a warning, and is never chosen", async () => {
  await withHarness(async (h) => {
    const run = await startedJob(h, "disk-full");
    const problem = "no end-of-central-directory record at its end: the zip was cut short";
    await log(h, run, {
      // The cut one's step has the better loss.
      points: loss([100, 200]),
      checkpoints: [
        { path: "/w/ckpt/ckpt-100.pt", step: 100, size_bytes: 9000, mtime: T0 + 100 },
        {
          path: "/w/ckpt/ckpt-200.pt",
          step: 200,
          size_bytes: 1024,
          mtime: T0 + 200,
          state: "incomplete",
          problem,
        },
      ],
    });
    const [good, cut] = await checkpoints(h, run);
    assertEquals([good.state, cut.state, cut.problem], ["valid", "incomplete", problem]);
    const rec = (await h.call("GET", `/api/checkpoints:recommend?run=${run}`)).json;
    assertEquals(rec.checkpoint.checkpoint_id, good.id);
    assertEquals(rec.skipped.map((s: { checkpoint_id: string }) => s.checkpoint_id), [cut.id]);
    assertStringIncludes(rec.skipped[0].why, `incomplete: "/w/ckpt/ckpt-200.pt" ${problem}`);
    const evaluate = await h.call("POST", `/api/checkpoints/${cut.id}/evaluations`, {
      body: { suite: "heldout", command: "python eval.py" },
    });
    assertEquals(evaluate.status, 409, evaluate.text);
    const events = (await h.call("GET", `/api/events?run_id=${run}&type=CHECKPOINT_INCOMPLETE`))
      .json.items;
    assertEquals(events.length, 1);
    assertStringIncludes(events[0].message, "is not complete");
    // Saved again, complete: valid.
    await log(h, run, {
      checkpoints: [{ path: "/w/ckpt/ckpt-200.pt", step: 200, size_bytes: 9000, mtime: T0 + 300 }],
    });
    assertEquals((await checkpoints(h, run))[1].state, "valid");
  });
});

Deno.test("two runs that saw the same path with the same time but other bytes: the earlier is overwritten", async () => {
  await withHarness(async (h) => {
    const first = await startedJob(h, "a");
    const second = await startedJob(h, "b");
    const c = { path: "/w/ckpt/ckpt-1.pt", step: 1, size_bytes: 10, mtime: T0 };
    await log(h, first, { checkpoints: [{ ...c, fingerprint: FP_A }] });
    await log(h, second, { checkpoints: [{ ...c, fingerprint: FP_B }] });
    assertEquals((await checkpoints(h, first))[0].state, "overwritten");
    assertEquals((await checkpoints(h, second))[0].state, "valid");
  });
});

Deno.test("a checkpoint's state, problem and fingerprint are checked at the edge", async () => {
  await withHarness(async (h) => {
    const run = await startedJob(h, "a");
    for (
      const [bad, field] of [
        [{ path: "/x.pt", state: "broken" }, "state"],
        [{ path: "/x.pt", fingerprint: "not hex" }, "fingerprint"],
        [{ path: "/x.pt", problem: "x".repeat(1001) }, "problem"],
      ] as const
    ) {
      const res = await h.call("POST", `/api/sdk/runs/${run}/log`, {
        token: h.tokens.write,
        body: { checkpoints: [bad] },
      });
      // The batch's other items would be kept; the bad one is refused, naming its field.
      assertEquals(res.status, 200, res.text);
      assertEquals(res.json.refused.items[0].path, `checkpoints.0.${field}`);
    }
    assertEquals(await checkpoints(h, run), []);
  });
});

Deno.test("a run saving last.ckpt again: the evaluation of its older file no longer ranks it", async () => {
  let clock = Date.parse("2026-03-01T10:00:00.000Z");
  await withHarness(async (h) => {
    const run = await startedJob(h, "lightning");
    const last = "/w/ckpt/last.ckpt";
    await log(h, run, {
      points: loss([10, 20]),
      checkpoints: [
        { path: "/w/ckpt/epoch=0-step=10.ckpt", step: 10, mtime: T0 + 10, fingerprint: FP_A },
        { path: last, step: 10, mtime: T0 + 10, fingerprint: FP_A },
      ],
    });
    const [, lastCk] = await checkpoints(h, run);
    const queued = await h.call("POST", `/api/checkpoints/${lastCk.id}/evaluations`, {
      body: { suite: "heldout", command: "python eval.py" },
    });
    assertEquals(queued.status, 201, queued.text);
    const evalRun = h.ctx.db.tx(() => {
      const job = jobsDb.getJob(h.ctx.db, queued.json.job.id)!;
      const { run_id } = dispatchJob(h.ctx, job, "gpu-1", [0]);
      markRunning(h.ctx, jobsDb.getJob(h.ctx.db, job.id)!, 78, h.ctx.now());
      return run_id;
    });
    clock += 60_000;
    await log(h, evalRun, { evaluation: { metrics: { accuracy: 0.9 } } });
    const before = (await h.call("GET", `/api/checkpoints:recommend?run=${run}`)).json;
    assertEquals([before.checkpoint.checkpoint_id, before.basis], [lastCk.id, "evaluation"]);

    // The next epoch: last.ckpt holds step 20's weights now, which nothing evaluated.
    clock += 60_000;
    await log(h, run, {
      checkpoints: [{ path: last, step: 20, mtime: T0 + 20, fingerprint: FP_B }],
    });
    const after = (await h.call("GET", `/api/checkpoints:recommend?run=${run}`)).json;
    assertEquals(after.basis, "training_metric");
    assertEquals(after.checkpoint.step, 20);
  }, { now: () => new Date(clock) });
});
