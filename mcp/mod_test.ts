import { assert, assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { type Harness, withHarness } from "../tests/_harness.ts";
import { jobs as jobsDb } from "../server/db/mod.ts";
import { dispatchJob, markRunning } from "../server/jobs/transitions.ts";
import { emitEvent } from "../server/events/emit.ts";
import { scopeOf, TOOLS } from "./mod.ts";
import { memoryClient } from "./_test_client.ts";
import { parseUntil, waitFor } from "../server/runs/wait.ts";
import { advanceSweeps, cancelSweep } from "../server/sweeps/service.ts";
import { lastEventId } from "../server/events/service.ts";

// deno-lint-ignore no-explicit-any -- tests read arbitrary structured answers
type Any = any;

const countRows = (h: Harness) =>
  h.ctx.db.sqlite.prepare(
    "SELECT (SELECT COUNT(*) FROM jobs) + (SELECT COUNT(*) FROM projects) + " +
      "(SELECT COUNT(*) FROM metric_definitions) + (SELECT COUNT(*) FROM evaluations) + " +
      "(SELECT COUNT(*) FROM notes) + (SELECT COUNT(*) FROM runs WHERE mark IS NOT NULL) AS n",
  ).get()!.n;

/** A queued job placed and started as the scheduler and agent would; its job and run ids. */
async function runningJob(h: Harness): Promise<{ job: string; run: string }> {
  const job = (await h.call("POST", "/api/jobs", {
    body: { name: "t", command: ["true"], working_dir: "/tmp", gpus: 1, project: "p" },
  })).json.id;
  const run = h.ctx.db.tx(() => {
    const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, job)!, "n-1", [0]);
    markRunning(h.ctx, jobsDb.getJob(h.ctx.db, job)!, 4242, h.ctx.now());
    return run_id;
  });
  return { job, run };
}

Deno.test("tools/list gives the 29 tools, each with annotations, an output schema and every input field described", async () => {
  await withHarness(async (h) => {
    await using client = await memoryClient(h.ctx, h.tokens.read);
    const { tools }: { tools: Any[] } = await client.listTools();
    assertEquals(tools.map((t) => t.name), TOOLS.map((t) => t.name));
    assertEquals(tools.length, 29);
    for (const t of tools) {
      assert(t.description && t.description.length > 40, t.name);
      assert(t.outputSchema, `${t.name} has no output schema`);
      const a = t.annotations!;
      for (const hint of ["readOnlyHint", "destructiveHint", "idempotentHint"] as const) {
        assertEquals(typeof a[hint], "boolean", `${t.name} ${hint}`);
      }
      const def = TOOLS.find((d) => d.name === t.name)!;
      assertEquals(a.readOnlyHint, scopeOf(def.kind) === "read", t.name);
      for (const [field, schema] of Object.entries(t.inputSchema.properties ?? {})) {
        assert((schema as Any).description, `${t.name}.${field} has no description`);
      }
    }
    assertEquals(tools.find((t) => t.name === "cancel_job")!.annotations!.destructiveHint, true);
  });
});

Deno.test("a read token's control tools answer WriteScopeError and change nothing; its reads work", async () => {
  await withHarness(async (h) => {
    const { job, run } = await runningJob(h);
    const before = countRows(h);
    await using client = await memoryClient(h.ctx, h.tokens.read);
    const calls: Record<string, Record<string, unknown>> = {
      submit_job: { name: "x", command: ["true"], working_dir: "/tmp", gpus: 0 },
      cancel_job: { job_id: job },
      retry_job: { job_id: job },
      evaluate_checkpoint: { checkpoint_id: "ck-1", suite: "s" },
      set_primary_metric: { scope: "global", key: "loss" },
      create_sweep: {
        name: "s",
        base: { name: "x", command: ["true"], working_dir: "/tmp", gpus: 0 },
        parameters: { lr: { values: [1] } },
        metric: "loss",
      },
      fork_run: { run_id: run, overrides: { args: { lr: 0.1 } } },
      mark_run: { run_id: run, mark: "kept", reason: "best so far" },
      add_note: { run_id: run, text: "tried warmup" },
    };
    const control = TOOLS.filter((t) => t.kind === "control").map((t) => t.name);
    assertEquals(control.sort(), Object.keys(calls).sort());
    for (const [name, args] of Object.entries(calls)) {
      const res: Any = await client.callTool({ name, arguments: args });
      assertEquals(res.isError, true, name);
      assertStringIncludes(res.content[0].text, "WriteScopeError");
      assertStringIncludes(res.content[0].text, 'needs a token of scope "write"');
    }
    assertEquals(countRows(h), before);
    assertEquals(jobsDb.getJob(h.ctx.db, job)!.status, "RUNNING");
    const status: Any = await client.callTool({ name: "get_status", arguments: {} });
    assertEquals([status.isError, status.structuredContent.jobs.running], [undefined, 1]);
  });
});

Deno.test("a domain error is a tool error naming its code: an unknown run, a bad argument", async () => {
  await withHarness(async (h) => {
    await using client = await memoryClient(h.ctx, h.tokens.write);
    const missing: Any = await client.callTool({
      name: "get_run",
      arguments: { run_id: "r-none" },
    });
    assertEquals(missing.isError, true);
    assertStringIncludes(missing.content[0].text, 'NotFound: Run "r-none" does not exist');
    const bad: Any = await client.callTool({
      name: "wait_for_run",
      arguments: { run_id: "r-none", until: "soon" },
    });
    assertEquals(bad.isError, true);
    assertStringIncludes(bad.content[0].text, "ValidationError");
    const both: Any = await client.callTool({
      name: "get_best_checkpoint",
      arguments: {},
    });
    assertStringIncludes(both.content[0].text, "ValidationError");
  });
});

Deno.test("parseUntil() reads finished, step>=N and event types", () => {
  assertEquals(parseUntil("finished"), { kind: "finished" });
  assertEquals(parseUntil("step>=500"), { kind: "step", step: 500 });
  assertEquals(parseUntil("step ≥ 20"), { kind: "step", step: 20 });
  assertEquals(parseUntil("CHECKPOINT_CREATED"), { kind: "event", type: "CHECKPOINT_CREATED" });
});

Deno.test("wait_for_run wakes on the step, on an anomaly, on the end, and times out", async () => {
  await withHarness(async (h) => {
    const { job, run } = await runningJob(h);
    await using client = await memoryClient(h.ctx, h.tokens.read);
    const wait = (args: Record<string, unknown>) =>
      client.callTool({ name: "wait_for_run", arguments: args }) as Promise<Any>;
    const log = (body: unknown) => h.call("POST", `/api/sdk/runs/${run}/log`, { body });

    // Step: the points arrive after the wait has begun.
    const byStep = wait({ run_id: run, until: "step>=20", timeout_s: 60 });
    await log({ points: [{ key: "train/loss", step: 10, value: 1 }], step: 10 });
    await log({ points: [{ key: "train/loss", step: 20, value: 0.9 }], step: 20 });
    const step = (await byStep).structuredContent;
    assertEquals([step.reason, step.step, step.status], ["step", 20, "RUNNING"]);
    assert(step.diagnosis.summary.length > 0);
    assert(step.next_actions.some((a: Any) => a.tool === "wait_for_run"));

    // Anomaly: a NaN wakes a wait for the end, by job id. (after_event_id: the events before
    // the call, so the NaN counts even if it is stored before the wait begins.)
    const byAnomaly = wait({ job_id: job, timeout_s: 60, after_event_id: step.last_event_id });
    h.ctx.db.tx(() =>
      emitEvent(h.ctx, {
        type: "LOSS_NAN",
        severity: "critical",
        run_id: run,
        job_id: job,
        message: "train/loss is NaN at step 30",
        data: {},
      })
    );
    const nan = (await byAnomaly).structuredContent;
    assertEquals([nan.reason, nan.event.type, nan.run_id], ["anomaly", "LOSS_NAN", run]);
    assert(
      nan.next_actions.some((a: Any) => a.tool === "cancel_job"),
      JSON.stringify(nan.next_actions),
    );

    // The same NaN does not wake the next wait; the end does.
    const byEnd = wait({ run_id: run, after_event_id: nan.last_event_id, timeout_s: 60 });
    await log({ status: "SUCCEEDED" });
    const end = (await byEnd).structuredContent;
    assertEquals([end.reason, end.status], ["finished", "SUCCEEDED"]);
    // Already finished: at once.
    assertEquals((await wait({ run_id: run })).structuredContent.reason, "finished");

    const other = await runningJob(h);
    const timeout = (await wait({ job_id: other.job, timeout_s: 1 })).structuredContent;
    assertEquals([timeout.reason, timeout.run_id, timeout.status], [
      "timeout",
      other.run,
      "RUNNING",
    ]);
    assert(timeout.next_actions.some((a: Any) => a.tool === "wait_for_run"));
  });
});

Deno.test("waitFor() ticks while it waits and stops at once when its call is cancelled", async () => {
  await withHarness(async (h) => {
    const { run } = await runningJob(h);
    const abort = new AbortController();
    let ticks = 0;
    const waiting = waitFor(h.ctx, { run_id: run }, { kind: "finished" }, {
      timeoutMs: 60_000,
      since: 0,
      signal: abort.signal,
      tick: {
        everyMs: 10,
        onTick: () => {
          if (++ticks === 3) abort.abort();
        },
      },
    });
    const wake = await waiting;
    assertEquals([wake.reason, wake.run_id, ticks], ["cancelled", run, 3]);
  });
});

Deno.test("a long wait sends progress, so a client whose timeout resets on progress outwaits it", async () => {
  await withHarness(async (h) => {
    const { run } = await runningJob(h);
    await using client = await memoryClient(h.ctx, h.tokens.read, { progressEveryMs: 50 });
    const seen: Any[] = [];
    const res: Any = await client.callTool(
      { name: "wait_for_run", arguments: { run_id: run, timeout_s: 1 } },
      undefined,
      { timeout: 400, resetTimeoutOnProgress: true, onprogress: (p: Any) => seen.push(p) },
    );
    assertEquals(res.structuredContent.reason, "timeout");
    assert(seen.length >= 5, `${seen.length} progress notifications`);
    assertEquals(seen[0].total, 1);
  });
});

Deno.test("create_sweep and get_sweep answer the sweep; wait_for_run {sweep_id} wakes when a trial stops and when it ends", async () => {
  await withHarness(async (h) => {
    await using client = await memoryClient(h.ctx, h.tokens.write);
    const call = (name: string, args: Record<string, unknown>) =>
      client.callTool({ name, arguments: args }) as Promise<Any>;
    const created = (await call("create_sweep", {
      name: "lr",
      project: "p",
      base: { name: "t", command: ["python", "t.py"], working_dir: "/tmp", gpus: 0 },
      parameters: { lr: { values: [0.1, 0.01] } },
      metric: "eval/loss",
      early_stop: { min_steps: 10, every: 10, keep_fraction: 0.5 },
    })).structuredContent;
    assertEquals([created.status, created.trials.length], ["RUNNING", 2]);
    const got = (await call("get_sweep", { sweep_id: created.id })).structuredContent;
    assertEquals(got.id, created.id);

    // Both trials run and reach rung 10; the worse one is stopped, which wakes the wait.
    const runs = created.trials.map((t: Any) =>
      h.ctx.db.tx(() => {
        const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, t.job_id)!, "n", []);
        markRunning(h.ctx, jobsDb.getJob(h.ctx.db, t.job_id)!, 1, h.ctx.now());
        return run_id;
      })
    );
    // after_event_id: the events before the call, so the stop counts even if it is stored first.
    const before = lastEventId(h.ctx);
    const byStop = call("wait_for_run", {
      sweep_id: created.id,
      after_event_id: before,
      timeout_s: 60,
    });
    for (const [i, v] of [[0, 0.3], [1, 0.9]]) {
      await h.call("POST", `/api/sdk/runs/${runs[i]}/log`, {
        body: { points: [{ key: "eval/loss", step: 10, value: v }], step: 10 },
      });
    }
    advanceSweeps(h.ctx);
    const stop = (await byStop).structuredContent;
    assertEquals([stop.reason, stop.event.type, stop.run_id], [
      "event",
      "SWEEP_TRIAL_STOPPED",
      runs[1],
    ]);
    assertEquals(stop.sweep.trials[1].status, "STOPPED");

    // Cancelling the sweep ends it, which wakes the next wait.
    const byEnd = call("wait_for_run", {
      sweep_id: created.id,
      after_event_id: stop.last_event_id,
    });
    cancelSweep(h.ctx, created.id, "ana");
    const end = (await byEnd).structuredContent;
    assertEquals([end.reason, end.status], ["finished", "CANCELLED"]);
  });
});
