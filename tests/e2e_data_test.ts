/**
 * What a training job's data looks like from outside, with real processes: the synthetic
 * example's points live over SSE, TensorBoard files picked up as they grow, anomalies raised
 * once, failures explained, webhooks delivered.
 */
import { assert, assertClose, assertEquals, assertStringIncludes } from "./assert.ts";
import { api, startCluster, until } from "./_processes.ts";
import { openSse } from "./_sse_client.ts";
import { tfeventsPath } from "./fixtures/mod.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const FIXTURES = tfeventsPath();

async function cluster(serverYaml = "") {
  return await startCluster({ fakeGpus: 1, serverYaml, prefix: "gpuctl-e2e-data-" });
}

type Call = ReturnType<typeof api>;

/** Submits `examples/synthetic/train.py` with `args` as a 1-GPU job in the cluster's home. */
async function submitSynthetic(
  c: Awaited<ReturnType<typeof cluster>>,
  name: string,
  args: string[],
  extra: Record<string, unknown> = {},
) {
  return (await c.call("POST", "/api/jobs", {
    name,
    command: ["python3", `${ROOT}/examples/synthetic/train.py`, ...args],
    working_dir: c.home,
    gpus: 1,
    ...extra,
  })).json;
}

async function finished(call: Call, id: string, ms = 60_000) {
  return await until(
    async () => {
      const j = (await call("GET", `/api/jobs/${id}`)).json;
      return ["SUCCEEDED", "FAILED", "CANCELLED", "LOST"].includes(j.status) ? j : null;
    },
    ms,
    `job ${id} finished`,
  );
}

async function eventsOf(call: Call, runId: string, type: string) {
  return (await call("GET", `/api/events?run_id=${runId}&type=${type}`)).json.items;
}

Deno.test("the synthetic example's points reach SSE within a second of being logged; checkpoints are listed by step", async () => {
  const c = await cluster();
  try {
    const job = await submitSynthetic(
      c,
      "synthetic",
      // In the working dir (not the run's folder), where the checkpoint_dir watcher looks.
      ["--steps", "60", "--sleep", "0.05", "--ckpt-every", "20", "--ckpt-dir", "checkpoints"],
      { checkpoint_dir: "checkpoints" },
    );
    const running = await until(
      async () => {
        const j = (await c.call("GET", `/api/jobs/${job.id}`)).json;
        return j.run_id && ["RUNNING", "SUCCEEDED"].includes(j.status) ? j : null;
      },
      30_000,
      "running",
    );
    const sse = await openSse(
      `${c.server.url}/api/runs/${running.run_id}/metrics/stream?after=0`,
      c.server.adminToken,
    );
    const lags: number[] = [];
    let seen = 0;
    const watch = setInterval(() => {
      const now = Date.now() / 1000;
      for (const m of sse.messages.slice(seen)) {
        for (const p of m.data.points) if (p.key === "train/loss") lags.push(now - p.wall_time);
      }
      seen = sse.messages.length;
    }, 10);
    const done = await finished(c.call, job.id);
    await sse.until(
      (x) =>
        x.messages.flatMap((m) => m.data.points).filter((p) => p.key === "train/loss").length >= 60,
      10_000,
    );
    clearInterval(watch);
    await sse.close();
    assertEquals(done.status, "SUCCEEDED");
    // Points logged while the stream was open: each arrived within a second.
    const live = lags.slice(-30).sort((x, y) => x - y);
    assert(live.length >= 20, `only ${live.length} live points`);
    const p95 = live[Math.floor(live.length * 0.95)];
    assert(p95 < 1.0, `95% of points arrived within ${p95.toFixed(3)} s, not within a second`);

    const q = await c.call("POST", "/api/runs/metrics:query", {
      runs: [done.run_id],
      keys: ["train/loss", "eval/loss", "eval/accuracy"],
    });
    const byKey = Object.fromEntries(
      q.json.series.map((s: { key: string; steps: number[] }) => [s.key, s.steps]),
    );
    assertEquals(byKey["train/loss"].length, 60);
    assertEquals(byKey["eval/loss"], [0, 20, 40, 59]);
    const cks = await until(
      async () => {
        const items = (await c.call("GET", `/api/runs/${done.run_id}/checkpoints`)).json.items;
        return items.length >= 3 ? items : null;
      },
      10_000,
      "checkpoints",
    );
    assertEquals(cks.map((k: { step: number }) => k.step), [20, 40, 59]);
    assert(cks.every((k: { path: string }) => k.path.startsWith(`${c.home}/checkpoints/`)));
    assert(cks[0].metrics["train/loss"] !== undefined, "metrics at the checkpoint's step");
  } finally {
    await c.stop();
  }
});

Deno.test("TensorBoard files copied into a job's dir piece by piece end as the expected 160 points, once each", async () => {
  const c = await cluster();
  try {
    // The job copies the real event files into runs/ in small pieces, slowly.
    const script = `
import os, time
src = ${JSON.stringify(FIXTURES)}
files = []
for rel in ["keras-exp0/train", "keras-exp0/validation", "torch-logs"]:
    for name in sorted(os.listdir(os.path.join(src, rel))):
        if name.startswith("events.out.tfevents"):
            files.append((os.path.join(src, rel, name), os.path.join("runs", rel.replace("keras-exp0", "keras").replace("torch-logs", "torch"), name)))
for s, d in files:
    os.makedirs(os.path.dirname(d), exist_ok=True)
    data = open(s, "rb").read()
    step = max(1, len(data) // 7)
    with open(d, "wb") as f:
        for i in range(0, len(data), step):
            f.write(data[i:i + step]); f.flush()
            time.sleep(0.15)
print("copied", len(files), flush=True)
time.sleep(3)
`;
    const job = (await c.call("POST", "/api/jobs", {
      name: "tb",
      command: ["python3", "-c", script],
      working_dir: c.home,
      gpus: 0,
    })).json;
    const done = await finished(c.call, job.id, 90_000);
    assertEquals(done.status, "SUCCEEDED");
    const keys = (await c.call("GET", `/api/runs/${done.run_id}/metrics`)).json.keys
      .filter((k: { key: string }) => !k.key.startsWith("sys/"));
    const total = keys.reduce((n: number, k: { points: number }) => n + k.points, 0);
    assertEquals(total, 160);
    const torch = await c.call("POST", "/api/runs/metrics:query", {
      runs: [done.run_id],
      keys: ["torch/y=x"],
    });
    const s = torch.json.series[0];
    assertEquals(s.steps, Array.from({ length: 100 }, (_, i) => i));
    assertEquals(s.values, s.steps.map((x: number) => 2 * x));
    const expected = (await Deno.readTextFile(`${FIXTURES}/expected-scalars.jsonl`)).trim().split(
      "\n",
    )
      .map((l) => JSON.parse(l)).filter((r) =>
        r.file.startsWith("keras-exp0/validation/") && r.tag === "epoch_loss"
      );
    const val = await c.call("POST", "/api/runs/metrics:query", {
      runs: [done.run_id],
      keys: ["keras/validation/epoch_loss"],
    });
    for (const r of expected) {
      const i = val.json.series[0].steps.indexOf(r.step);
      assertClose(val.json.series[0].values[i], r.value, 1e-6);
    }
  } finally {
    await c.stop();
  }
});

Deno.test("anomalies are raised once each, an OOM failure is explained, and webhooks are filtered by severity", async () => {
  const received: { type: string; severity: string }[] = [];
  const abort = new AbortController();
  const receiver = Deno.serve({
    hostname: "127.0.0.1",
    port: 0,
    signal: abort.signal,
    onListen: () => {},
  }, async (req) => {
    received.push(await req.json());
    return new Response("ok");
  });
  const c = await cluster(
    `webhooks:\n  - url: http://127.0.0.1:${receiver.addr.port}/hook\n    kind: json\n    min_severity: critical\n`,
  );
  try {
    const anomalies = await submitSynthetic(
      c,
      "anomalies",
      ["--steps", "200", "--eval-every", "10", "--nan-at", "150", "--overfit-after", "60"],
      { gpus: 0 },
    );
    const oom = await submitSynthetic(c, "oom", ["--steps", "100", "--fail-oom-at", "30"]);
    const a = await finished(c.call, anomalies.id);
    assertEquals(a.status, "SUCCEEDED");
    await until(
      async () => (await eventsOf(c.call, a.run_id, "LOSS_NAN")).length === 1,
      10_000,
      "LOSS_NAN",
    );
    assertEquals((await eventsOf(c.call, a.run_id, "OVERFITTING_SUSPECTED")).length, 1);
    assertEquals((await eventsOf(c.call, a.run_id, "LOSS_NAN")).length, 1);

    const o = await finished(c.call, oom.id);
    assertEquals([o.status, o.failure_class], ["FAILED", "OOM"]);
    const failure = (await c.call("GET", `/api/runs/${o.run_id}/failure`)).json;
    assertStringIncludes(failure.likely_cause.toLowerCase(), "out of memory");
    const logLine = failure.evidence.find((e: { kind: string; line_no?: number }) =>
      e.kind === "log" && e.line_no
    );
    assert(logLine, JSON.stringify(failure.evidence));
    const lines = (await c.call("GET", `/api/runs/${o.run_id}/logs?after_seq=0`)).json.lines;
    assertStringIncludes(
      lines.find((l: { seq: number }) => l.seq === logLine.line_no).text,
      "CUDA out of memory",
    );
    assert(failure.suggested_fixes.some((f: string) => f.includes("batch size")));

    // Critical events only: LOSS_NAN and OOM reach the hook, warnings do not.
    await until(
      () => received.some((e) => e.type === "OOM") && received.some((e) => e.type === "LOSS_NAN"),
      15_000,
      "webhooks",
    );
    assert(
      received.every((e) => e.severity === "critical"),
      JSON.stringify(received.map((e) => e.type)),
    );
  } finally {
    await c.stop();
    abort.abort();
    await receiver.finished;
  }
});

Deno.test("a checkpoint evaluated by a job's results file becomes the recommended one", async () => {
  const c = await cluster();
  try {
    const job = await submitSynthetic(c, "train", ["--steps", "61", "--ckpt-every", "20"], {
      checkpoint_dir: "checkpoints",
    });
    const done = await finished(c.call, job.id);
    assertEquals(done.status, "SUCCEEDED");
    const cks = await until(
      async () => {
        const items = (await c.call("GET", `/api/runs/${done.run_id}/checkpoints`)).json.items;
        return items.length >= 3 ? items : null;
      },
      10_000,
      "checkpoints",
    );
    // By the training metric the last checkpoint is best; evaluate the first one only.
    const before = (await c.call("GET", `/api/checkpoints:recommend?run=${done.run_id}`)).json;
    assertEquals(before.checkpoint.step, 60);
    const early = cks.find((k: { step: number }) => k.step === 20);
    const write =
      "import json, os; json.dump({'metrics': {'eval/accuracy': 0.97}}, open(os.environ['GPUCTL_EVAL_OUTPUT'], 'w'))";
    const queued = await c.call("POST", `/api/checkpoints/${early.id}/evaluations`, {
      suite: "heldout",
      command: ["python3", "-c", write],
    });
    assertEquals(queued.status, 201, queued.text);
    const evaluation = await until(
      async () => {
        const e = (await c.call("GET", `/api/evaluations/${queued.json.evaluation.id}`)).json;
        return e.status === "COMPLETED" ? e : null;
      },
      30_000,
      "evaluation completed",
    );
    assertEquals(evaluation.metrics, { "eval/accuracy": 0.97 });
    // The results file completes the evaluation as the job exits; the job's own
    // end is recorded a moment later.
    const evalJob = await finished(c.call, queued.json.job.id);
    assertEquals([evalJob.kind, evalJob.status], ["EVALUATE", "SUCCEEDED"]);
    const after = (await c.call("GET", `/api/checkpoints:recommend?run=${done.run_id}`)).json;
    assertEquals([after.checkpoint.checkpoint_id, after.basis], [early.id, "evaluation"]);
    const completed = (await c.call("GET", "/api/events?type=EVALUATION_COMPLETED")).json.items;
    assertEquals(completed.length, 1);
  } finally {
    await c.stop();
  }
});
