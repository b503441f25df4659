/**
 * Waiting over REST and the CLI (`GET /api/{runs,jobs,sweeps}/{id}/wait`, `gpuctl run wait`):
 * the same wait MCP's `wait_for_run` does, held open until what was asked happens, refused
 * before waiting when the request is wrong, and giving its slot back when the client leaves.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { type Harness, withHarness } from "./_harness.ts";
import { until } from "./_processes.ts";
import { openWaits } from "../server/runs/wait_slots.ts";
import { emitEvent } from "../server/events/emit.ts";
import { sseStreamsOf } from "../server/http/sse.ts";
import { runInProcess, startTestServer, tempHome } from "../cli/_test_server.ts";

async function sdkRun(h: Harness): Promise<string> {
  const res = await h.call("POST", "/api/sdk/runs", {
    token: h.tokens.write,
    body: { project: "p", name: "waited", config: {} },
  });
  assertEquals(res.status, 201, res.text);
  return res.json.id;
}

async function log(h: Harness, run: string, body: unknown) {
  const res = await h.call("POST", `/api/sdk/runs/${run}/log`, { token: h.tokens.write, body });
  assertEquals(res.status, 200, res.text);
  return res.json;
}

/** Starts a wait; resolves, once the server holds it open (its slot taken), to its answer-to-be. */
async function openWait(h: Harness, path: string) {
  const before = openWaits(h.ctx);
  const answer = h.call("GET", path, { token: h.tokens.read });
  await until(() => openWaits(h.ctx) > before, 10_000, `${path} open`);
  return { answer };
}

Deno.test("a run's wait stays open until the run finishes, then answers why with its status and diagnosis", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const answer = await openWait(h, `/api/runs/${run}/wait?timeout_s=60`);
    await log(h, run, { points: [{ key: "loss", step: 1, value: 0.5 }] });
    await log(h, run, { status: "SUCCEEDED" });
    const res = await answer.answer;
    assertEquals(res.status, 200, res.text);
    assertEquals([res.json.reason, res.json.run_id, res.json.status], [
      "finished",
      run,
      "SUCCEEDED",
    ]);
    assert(res.json.diagnosis?.summary, "no diagnosis");
    assertStringIncludes(res.json.summary, "finished");
    assertEquals(openWaits(h.ctx), 0);
  });
});

Deno.test("until step>=N wakes at the step; an anomaly wakes it early; after_event_id waits on past it", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const stepWait = await openWait(h, `/api/runs/${run}/wait?until=step%3E%3D5&timeout_s=60`);
    await log(h, run, { points: [{ key: "loss", step: 4, value: 0.5 }] });
    await log(h, run, { points: [{ key: "loss", step: 5, value: 0.4 }] });
    const step = (await stepWait.answer).json;
    assertEquals([step.reason, step.step], ["step", 5]);

    const anomalyWait = await openWait(h, `/api/runs/${run}/wait?timeout_s=60`);
    h.ctx.db.tx(() =>
      emitEvent(h.ctx, {
        type: "LOSS_NAN",
        severity: "critical",
        run_id: run,
        job_id: null,
        message: "loss is NaN at step 6",
        data: {},
      })
    );
    const anomaly = (await anomalyWait.answer).json;
    assertEquals([anomaly.reason, anomaly.event?.type], ["anomaly", "LOSS_NAN"]);
    assert(anomaly.next_actions.length > 0);

    const onward = await openWait(
      h,
      `/api/runs/${run}/wait?timeout_s=60&after_event_id=${anomaly.last_event_id}`,
    );
    await log(h, run, { status: "FAILED" });
    assertEquals((await onward.answer).json.reason, "finished");
  });
});

Deno.test("a job's wait follows the job (a queued one times out, saying how to wait on); an unknown sweep is refused", async () => {
  await withHarness(async (h) => {
    const job = await h.call("POST", "/api/jobs", {
      body: { name: "queued", command: ["true"], working_dir: "/", gpus: 1 },
    });
    assertEquals(job.status, 201, job.text);
    const waited = await h.call("GET", `/api/jobs/${job.json.id}/wait?timeout_s=1`, {
      token: h.tokens.read,
    });
    // No agent: the job stays queued, so the wait times out and says how to wait on.
    assertEquals([waited.status, waited.json.reason, waited.json.job_id], [
      200,
      "timeout",
      job.json.id,
    ]);
    assertEquals(waited.json.next_actions.at(-1)?.tool, "wait_for_run");
    const unknownSweep = await h.call("GET", "/api/sweeps/s-none/wait?timeout_s=1", {
      token: h.tokens.read,
    });
    assertEquals(unknownSweep.status, 404, unknownSweep.text);
  });
});

Deno.test("a wrong wait is refused before waiting, naming the field, and holds no slot", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    for (
      const [path, status, words] of [
        [`/api/runs/${run}/wait?until=soon`, 400, "until"],
        [`/api/runs/${run}/wait?timeout_s=0`, 400, "timeout_s"],
        [`/api/runs/${run}/wait?timeout_s=601`, 400, "timeout_s"],
        [`/api/runs/${run}/wait?after_event_id=-1`, 400, "after_event_id"],
        ["/api/runs/r-none/wait", 404, "r-none"],
        ["/api/jobs/j-none/wait", 404, "j-none"],
      ] as const
    ) {
      const res = await h.call("GET", path, { token: h.tokens.read });
      assertEquals(res.status, status, `${path}: ${res.text}`);
      assertStringIncludes(res.text, words, path);
    }
    assertEquals((await h.call("GET", `/api/runs/${run}/wait`, { token: null })).status, 401);
    assertEquals(openWaits(h.ctx), 0);
  });
});

Deno.test("a client that goes away ends its wait and gives the slot back", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const res = await h.app.fetch(
      new Request(`http://gpuctl.test/api/runs/${run}/wait?timeout_s=600`, {
        headers: { authorization: `Bearer ${h.tokens.read}` },
      }),
    );
    assertEquals(res.status, 200);
    assertEquals(openWaits(h.ctx), 1);
    await res.body!.cancel();
    await until(() => openWaits(h.ctx) === 0, 10_000, "the slot given back");
  });
});

Deno.test("a server that stops ends its open waits (cancelled), so its shutdown is not held", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const { answer } = await openWait(h, `/api/runs/${run}/wait?timeout_s=600`);
    sseStreamsOf(h.ctx).closeAll();
    const res = await answer;
    assertEquals([res.status, res.json.reason, res.json.status], [200, "cancelled", "RUNNING"]);
    assertEquals(openWaits(h.ctx), 0);
  });
});

Deno.test("gpuctl run wait: exit 0 when the run succeeds, 1 when it fails, 124 on timeout; --json is the API's answer", async () => {
  const server = await startTestServer();
  const { home, cleanup } = await tempHome();
  try {
    const h = server.h;
    const env = { GPUCTL_HOME: home, GPUCTL_SERVER_URL: server.url, GPUCTL_TOKEN: h.tokens.read };
    const ok = await sdkRun(h);
    const okWait = runInProcess(["run", "wait", ok, "--timeout", "60"], env);
    await until(() => openWaits(h.ctx) === 1, 10_000, "the CLI's wait open");
    await log(h, ok, { status: "SUCCEEDED" });
    const okRes = await okWait;
    assertEquals([okRes.code, okRes.stderr], [0, ""]);
    assertStringIncludes(okRes.stdout, "finished");
    assertStringIncludes(okRes.stdout, "SUCCEEDED");

    const bad = await sdkRun(h);
    await log(h, bad, { status: "FAILED" });
    const badRes = await runInProcess(["run", "wait", bad, "--json"], env);
    assertEquals(badRes.code, 1, badRes.stderr);
    assertEquals(JSON.parse(badRes.stdout).status, "FAILED");

    const slow = await sdkRun(h);
    const slowRes = await runInProcess(["run", "wait", slow, "--timeout", "1"], env);
    assertEquals(slowRes.code, 124, slowRes.stderr);
    assertStringIncludes(slowRes.stdout, "timeout");

    const wrong = await runInProcess(["run", "wait", slow, "--until", "later"], env);
    assertEquals(wrong.code, 1);
    assertStringIncludes(wrong.stderr, "until");
  } finally {
    await cleanup();
    await server.close();
  }
});
