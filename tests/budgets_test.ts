/**
 * Budgets an agent cannot exceed, on every face: an admin sets them at token creation and
 * changes them; a submission, a sweep, an MCP call and the console's form past one are refused
 * naming the budget, the use and the limit, and store nothing; whoami and get_status show what
 * is left; no other door (fork, evaluation, sweep, retry) gets past one; dry runs check and
 * forecast without storing; the scheduler holds a token's jobs at its GPU limit, and a job past
 * its wall-clock is cancelled with the budget as its reason.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { type Harness, withHarness } from "./_harness.ts";
import { call, httpClient } from "./_mcp_client.ts";
import { createGatewayHarness, eventually, FakeAgent, FakeClock } from "./_fake_agent.ts";
import { BudgetLoop } from "../server/budgets/loop.ts";
import { seededHarness } from "./_seed.ts";

const JOB = { command: ["python", "train.py"], working_dir: "/w", gpus: 1 };

/** An admin-made write token with this budget: its secret. */
async function budgeted(h: Harness, budget: Record<string, number>, name = "agent") {
  const res = await h.call("POST", "/api/tokens", { body: { name, scope: "write", budget } });
  assertEquals(res.status, 201, res.text);
  assertEquals(res.json.budget, budget);
  return { token: res.json.token as string, id: res.json.id as string };
}

const count = async (h: Harness, path: string) => (await h.call("GET", path)).json.items.length;

Deno.test("REST: a submission past max_queued_jobs is refused naming the budget, use and limit, and stores nothing; whoami shows what is left", async () => {
  await withHarness(async (h) => {
    const { token } = await budgeted(h, { max_queued_jobs: 1, max_gpus: 2 });
    let me = (await h.call("GET", "/api/auth/whoami", { token })).json;
    assertEquals(me.budget.max_queued_jobs, { limit: 1, used: 0, left: 1 });
    assertEquals(me.budget.max_gpu_hours_24h, null);

    const first = await h.call("POST", "/api/jobs", { token, body: { ...JOB, name: "a" } });
    assertEquals(first.status, 201);
    const events = await count(h, "/api/events");
    const second = await h.call("POST", "/api/jobs", { token, body: { ...JOB, name: "b" } });
    assertEquals(second.status, 429);
    assertEquals(second.json.error.code, "BudgetExceeded");
    assertEquals(second.json.error.details, {
      budget: "max_queued_jobs",
      used: 1,
      requested: 1,
      limit: 1,
      token: "agent",
    });
    assertStringIncludes(
      second.json.error.message,
      'Cannot submit job "b": budget max_queued_jobs of token "agent": 1 of its jobs queued, limit 1',
    );
    assertEquals(await count(h, "/api/jobs"), 1);
    assertEquals(await count(h, "/api/events"), events);

    // More GPUs than it may ever hold: refused at once, whatever the queue.
    const big = await h.call("POST", "/api/jobs", {
      token,
      body: { ...JOB, name: "big", gpus: 4 },
    });
    assertEquals([big.status, big.json.error.details.budget], [429, "max_gpus"]);

    me = (await h.call("GET", "/api/auth/whoami", { token })).json;
    assertEquals(me.budget.max_queued_jobs, { limit: 1, used: 1, left: 0 });
    const status = (await h.call("GET", "/api/status", { token })).json;
    assertEquals(status.budget.max_queued_jobs.left, 0);
    // Other tokens are not held to it.
    assertEquals((await h.call("POST", "/api/jobs", { body: { ...JOB, name: "c" } })).status, 201);
  });
});

Deno.test("REST: an admin changes a budget (given fields change, null removes, the rest stay); others cannot; bad values change nothing", async () => {
  await withHarness(async (h) => {
    const { token, id } = await budgeted(h, { max_queued_jobs: 1, max_trials_per_sweep: 2 });
    await h.call("POST", "/api/jobs", { token, body: { ...JOB, name: "a" } });

    const bad = await h.call("PUT", `/api/tokens/${id}/budget`, { body: { max_gpus: -1 } });
    assertEquals(bad.status, 400);
    assertEquals(bad.json.error.details[0].field, "max_gpus");
    const unknown = await h.call("PUT", `/api/tokens/${id}/budget`, { body: { max_cats: 1 } });
    assertEquals(unknown.status, 400);
    const notAdmin = await h.call("PUT", `/api/tokens/${id}/budget`, {
      token,
      body: { max_queued_jobs: 100 },
    });
    assertEquals(notAdmin.status, 403);
    assertEquals(
      (await h.call("GET", "/api/tokens")).json.items.find((t: { id: string }) => t.id === id)
        .budget,
      { max_queued_jobs: 1, max_trials_per_sweep: 2 },
    );

    const changed = await h.call("PUT", `/api/tokens/${id}/budget`, {
      body: { max_queued_jobs: 3, max_trials_per_sweep: null, max_wall_clock_s: 600 },
    });
    assertEquals(changed.status, 200, changed.text);
    assertEquals(changed.json.budget, { max_queued_jobs: 3, max_wall_clock_s: 600 });
    assert(!("secret_hash" in changed.json));
    assertEquals(
      (await h.call("POST", "/api/jobs", { token, body: { ...JOB, name: "b" } })).status,
      201,
    );
    assertEquals((await h.call("PUT", "/api/tokens/t-nope/budget", { body: {} })).status, 404);
  });
});

const SWEEP = {
  name: "lr",
  metric: "loss",
  base: { name: "t", ...JOB },
  parameters: { lr: { values: [0.1, 0.01, 0.001] } },
};

Deno.test("REST: a sweep with more trials than max_trials_per_sweep is refused; a dry run checks a sweep and stores nothing", async () => {
  await withHarness(async (h) => {
    const { token } = await budgeted(h, { max_trials_per_sweep: 2, max_queued_jobs: 5 });
    const res = await h.call("POST", "/api/sweeps", { token, body: SWEEP });
    assertEquals(res.status, 429, res.text);
    assertEquals(res.json.error.details, {
      budget: "max_trials_per_sweep",
      used: 0,
      requested: 3,
      limit: 2,
      token: "agent",
    });
    assertEquals([await count(h, "/api/sweeps"), await count(h, "/api/jobs")], [0, 0]);

    const two = { ...SWEEP, parameters: { lr: { values: [0.1, 0.01] } }, dry_run: true };
    const plan = await h.call("POST", "/api/sweeps", { token, body: two });
    assertEquals(plan.status, 200, plan.text);
    assertEquals([plan.json.dry_run, plan.json.stored], [true, false]);
    assertEquals(plan.json.sweep.trials.map((t: { params: unknown }) => t.params), [
      { lr: 0.1 },
      { lr: 0.01 },
    ]);
    assertEquals(plan.json.first_trials.length, 2);
    assertEquals(plan.json.first_trials[0].starts_now, false); // no node is online
    assertEquals(plan.json.budget_after.max_queued_jobs, { limit: 5, used: 2, left: 3 });
    assertEquals([await count(h, "/api/sweeps"), await count(h, "/api/jobs")], [0, 0]);
    // The trials are the sweep creator's: they count against its queue.
    const made = await h.call("POST", "/api/sweeps", { token, body: { ...two, dry_run: false } });
    assertEquals(made.status, 201, made.text);
    const me = (await h.call("GET", "/api/auth/whoami", { token })).json;
    assertEquals(me.budget.max_queued_jobs.used, 2);
  });
});

Deno.test("REST: a dry run answers as the submission would (validation, refusals) and stores nothing", async () => {
  await withHarness(async (h) => {
    const { token } = await budgeted(h, { max_queued_jobs: 1 });
    const events = await count(h, "/api/events");
    const plan = await h.call("POST", "/api/jobs", {
      token,
      body: { ...JOB, name: "try", project: "fresh", dry_run: true },
    });
    assertEquals(plan.status, 200, plan.text);
    assertEquals([plan.json.dry_run, plan.json.stored, plan.json.job.name], [true, false, "try"]);
    assert(!("id" in plan.json.job));
    const { reason, ...where } = plan.json.placement;
    assertEquals(where, {
      starts_now: false,
      node_id: null,
      gpu_indices: null,
      estimated_start_at: null,
    });
    // The scheduler's words, without the id of a job that was never stored.
    assertStringIncludes(reason, "Cannot place it: needs 1 GPU");
    assertEquals(plan.json.budget_after.max_queued_jobs, { limit: 1, used: 1, left: 0 });
    assertEquals(await count(h, "/api/jobs"), 0);
    assertEquals(await count(h, "/api/events"), events);
    // Not even its project was made.
    assert(
      !(await h.call("GET", "/api/projects")).json.items.some((p: { name: string }) =>
        p.name === "fresh"
      ),
    );

    const invalid = await h.call("POST", "/api/jobs", {
      token,
      body: { ...JOB, name: "x", gpus: -1, dry_run: true },
    });
    assertEquals([invalid.status, invalid.json.error.details[0].field], [400, "gpus"]);
    await h.call("POST", "/api/jobs", { token, body: { ...JOB, name: "real" } });
    const over = await h.call("POST", "/api/jobs", {
      token,
      body: { ...JOB, name: "more", dry_run: true },
    });
    assertEquals([over.status, over.json.error.details.budget], [429, "max_queued_jobs"]);
    assertEquals(await count(h, "/api/jobs"), 1);
  });
});

Deno.test("MCP: submit_job past the budget is a BudgetExceeded tool error; dry_run and get_status show the budget", async () => {
  await withHarness(async (h) => {
    const { token } = await budgeted(h, { max_queued_jobs: 1 });
    await using client = await httpClient("http://gpuctl.test", token, h.app.fetch);
    const plan = await call(client, "submit_job", { ...JOB, name: "a", dry_run: true });
    assertEquals([plan.dry_run, plan.placement.starts_now], [true, false]);
    assertEquals(plan.budget_after.max_queued_jobs.left, 0);
    assertEquals(await count(h, "/api/jobs"), 0);

    const job = await call(client, "submit_job", { ...JOB, name: "a" });
    assertEquals(job.status, "QUEUED");
    const refused = await client.callTool({
      name: "submit_job",
      arguments: { ...JOB, name: "b" },
    });
    assert(refused.isError);
    const text = (refused.content as { text: string }[])[0].text;
    assert(text.startsWith("BudgetExceeded: "), text);
    assertStringIncludes(text, "budget max_queued_jobs");
    assertStringIncludes(text, '"limit":1');
    assertEquals(await count(h, "/api/jobs"), 1);

    const status = await call(client, "get_status");
    assertEquals(status.budget.max_queued_jobs, { limit: 1, used: 1, left: 0 });
    const sweep = await client.callTool({ name: "create_sweep", arguments: SWEEP });
    assert(sweep.isError);
    assertStringIncludes((sweep.content as { text: string }[])[0].text, "budget max_queued_jobs");
  });
});

Deno.test("console: the job form of a session past its budget comes back 400 naming the budget; its Check button is a dry run; nothing is queued", async () => {
  await withHarness(async (h) => {
    const { token } = await budgeted(h, { max_gpus: 1 }, "notebook");
    const login = await h.app.fetch(
      new Request("http://gpuctl.test/login", {
        method: "POST",
        headers: { origin: "http://gpuctl.test" },
        body: new URLSearchParams({ token }),
      }),
    );
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const form = { command: "python train.py", working_dir: "/w" };
    const postJobForm = (fields: Record<string, string>) =>
      h.app.fetch(
        new Request("http://gpuctl.test/jobs", {
          method: "POST",
          headers: { cookie, origin: "http://gpuctl.test" },
          body: new URLSearchParams({ ...form, ...fields }),
          redirect: "manual",
        }),
      );
    const res = await postJobForm({ name: "wide", gpus: "2" });
    assertEquals(res.status, 400);
    const page = await res.text();
    assertStringIncludes(page, "budget max_gpus of token &quot;notebook&quot;");
    assertStringIncludes(page, "2 GPUs requested, more than the 1");
    assertEquals(await count(h, "/api/jobs"), 0);

    // "Check": a dry run of the form, answered on the page, nothing queued.
    const check = await postJobForm({ name: "narrow", gpus: "1", dry_run: "1" });
    assertEquals(check.status, 200);
    const checked = await check.text();
    assertStringIncludes(checked, "data-dry-run-result");
    assertStringIncludes(checked, "would wait in the queue");
    assertStringIncludes(checked, "Nothing was stored. Budget after: max_gpus: 0 of 1 used.");
    assertStringIncludes(checked, 'value="narrow"');
    assertEquals(await count(h, "/api/jobs"), 0);
  });
});

Deno.test("scheduler and budget loop: a token's jobs wait at max_gpus, a dry run forecasts the node and GPUs, and a job past max_wall_clock_s is cancelled with the budget as reason", async () => {
  const clock = new FakeClock();
  const h = await createGatewayHarness({}, clock);
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  try {
    agent.hello(); // node-a: 2 GPUs
    await agent.until((a) => a.of("ack").length === 2);
    const { token } = await budgeted(h, { max_gpus: 1, max_wall_clock_s: 60 });

    const plan = await h.call("POST", "/api/jobs", {
      token,
      body: { ...JOB, name: "first", dry_run: true },
    });
    assertEquals(plan.json.placement.starts_now, true, plan.text);
    assertEquals([plan.json.placement.node_id, plan.json.placement.gpu_indices], ["node-a", [0]]);
    assertEquals(plan.json.budget_after.max_gpus, { limit: 1, used: 1, left: 0 });
    assertEquals(await count(h, "/api/jobs"), 0);

    const first = (await h.call("POST", "/api/jobs", { token, body: { ...JOB, name: "first" } }))
      .json.id;
    await agent.until((a) => a.of("dispatch").length === 1);
    const ref = { job_id: first, attempt: 1, run_id: agent.of("dispatch")[0].job.run_id };
    agent.jobState(ref, "RUNNING", { ts: clock.now().getTime() / 1000 });
    await eventually(async () =>
      (await h.call("GET", `/api/jobs/${first}`)).json.status === "RUNNING"
    );

    // A free GPU is left on node-a, but the token holds its one GPU: the next job waits.
    const second = (await h.call("POST", "/api/jobs", { token, body: { ...JOB, name: "second" } }))
      .json.id;
    const waiting = await eventually(async () => {
      const j = (await h.call("GET", `/api/jobs/${second}`)).json;
      return j.reason?.includes("budget") ? j : null;
    });
    assertEquals(waiting.status, "QUEUED");
    assertStringIncludes(waiting.reason, 'budget max_gpus of token "agent": 1 GPUs held');
    const later = await h.call("POST", "/api/jobs", {
      token,
      body: { ...JOB, name: "third", dry_run: true },
    });
    assertEquals(later.json.placement.starts_now, false);
    assertStringIncludes(later.json.placement.reason, "budget max_gpus");
    // Another token's job takes the free GPU at once.
    await h.call("POST", "/api/jobs", { body: { ...JOB, name: "other" } });
    await agent.until((a) => a.of("dispatch").length === 2);
    assertEquals(agent.of("dispatch")[1].job.name, "other");

    // The wall-clock: nothing before the limit, the cancel once past it.
    const loop = new BudgetLoop(h.ctx);
    clock.ms += 59_000;
    assertEquals(loop.runOnce().cancelled, 0);
    clock.ms += 2_000;
    assertEquals(loop.runOnce().cancelled, 1);
    const cancelled = (await h.call("GET", `/api/jobs/${first}`)).json;
    assertStringIncludes(
      cancelled.reason,
      'budget max_wall_clock_s of token "agent": job ran 61 s, limit 60 s',
    );
    await agent.until((a) => a.of("cancel").some((c) => c.job_id === first));
    assertEquals(loop.runOnce().cancelled, 0); // asked once
    agent.jobState(ref, "CANCELLED");
    await eventually(async () =>
      (await h.call("GET", `/api/jobs/${first}`)).json.status === "CANCELLED"
    );
    // Its GPU is free for the token again: the waiting job starts.
    await agent.until((a) => a.of("dispatch").some((d) => d.job.job_id === second));
    assertEquals(
      (await h.call("GET", `/api/auth/whoami`, { token })).json.budget.max_gpus.used,
      1,
    );
  } finally {
    await agent.close();
    await h.stop();
  }
});

Deno.test("attacker: a token with no room left cannot queue work by another door (fork, evaluation, sweep, retry, MCP)", async () => {
  const { h, seed } = await seededHarness();
  try {
    const { token } = await budgeted(h, { max_queued_jobs: 0 }, "boxed");
    const before = await count(h, "/api/jobs?limit=1000");
    const doors: [string, string, unknown][] = [
      ["POST", "/api/jobs", { ...JOB, name: "plain" }],
      ["POST", `/api/runs/${seed.failedRun}/fork`, { overrides: { args: { lr: 0.1 } } }],
      ["POST", `/api/checkpoints/${seed.checkpoint}/evaluations`, { suite: "heldout" }],
      ["POST", "/api/sweeps", SWEEP],
    ];
    for (const [method, path, body] of doors) {
      const res = await h.call(method, path, { token, body });
      assertEquals([res.status, res.json?.error?.code], [429, "BudgetExceeded"], path);
      assertEquals(res.json.error.details.budget, "max_queued_jobs", path);
    }
    await using client = await httpClient("http://gpuctl.test", token, h.app.fetch);
    for (
      const [tool, args] of [
        ["fork_run", { run_id: seed.failedRun }],
        ["evaluate_checkpoint", { checkpoint_id: seed.checkpoint, suite: "heldout" }],
        ["create_sweep", SWEEP],
      ] as const
    ) {
      const res = await client.callTool({ name: tool, arguments: args });
      assert(res.isError, tool);
      assertStringIncludes((res.content as { text: string }[])[0].text, "BudgetExceeded: ", tool);
    }
    assertEquals(await count(h, "/api/jobs?limit=1000"), before);

    // A retry queues the job again: its submitter's budget counts it like a new one.
    const owner = await budgeted(h, { max_queued_jobs: 1 }, "owner");
    const first = (await h.call("POST", "/api/jobs", {
      token: owner.token,
      body: { ...JOB, name: "one" },
    })).json.id;
    await h.call("POST", `/api/jobs/${first}/cancel`, { token: owner.token });
    await h.call("POST", "/api/jobs", { token: owner.token, body: { ...JOB, name: "two" } });
    const retried = await h.call("POST", `/api/jobs/${first}/retry`); // even by the admin
    assertEquals(retried.status, 429);
    assertStringIncludes(
      retried.json.error.message,
      `Cannot retry job "${first}": budget max_queued_jobs of token "owner"`,
    );
    assertEquals((await h.call("GET", `/api/jobs/${first}`)).json.status, "CANCELLED");
  } finally {
    await h.close();
  }
});
