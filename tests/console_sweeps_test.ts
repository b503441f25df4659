/**
 * The console's sweep pages without a browser: the list, a sweep with its trials sorted by
 * the metric (a stopped one marked with its rung), the chart island's data, and cancel — asked
 * first, then done, and refused to a read session.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { consoleSession, type Harness, withHarness } from "./_harness.ts";
import { jobs as jobsDb } from "../server/db/mod.ts";
import { dispatchJob, markRunning } from "../server/jobs/transitions.ts";
import { advanceSweeps } from "../server/sweeps/service.ts";

function page(h: Harness, cookie: string, path: string, form?: Record<string, string>) {
  return h.app.fetch(
    new Request(`http://gpuctl.test${path}`, {
      method: form ? "POST" : "GET",
      headers: { cookie, origin: "http://gpuctl.test" },
      body: form ? new URLSearchParams(form) : undefined,
      redirect: "manual",
    }),
  );
}

/** A sweep of two trials that both reached rung 10; the worse is stopped there. */
async function sweepWithStop(h: Harness): Promise<{ id: string; runs: string[] }> {
  const created = await h.call("POST", "/api/sweeps", {
    body: {
      name: "lr <b>sweep</b>",
      project: "p",
      base: { name: "t", command: ["python", "t.py"], working_dir: "/tmp", gpus: 0 },
      parameters: { lr: { values: [0.1, 0.001] } },
      metric: "eval/loss",
      early_stop: { min_steps: 10, every: 10, keep_fraction: 0.5 },
    },
  });
  assertEquals(created.status, 201, created.text);
  const runs = created.json.trials.map((t: { job_id: string }) =>
    h.ctx.db.tx(() => {
      const { run_id } = dispatchJob(h.ctx, jobsDb.getJob(h.ctx.db, t.job_id)!, "n", []);
      markRunning(h.ctx, jobsDb.getJob(h.ctx.db, t.job_id)!, 1, h.ctx.now());
      return run_id;
    })
  );
  for (const [i, v] of [[0, 0.3], [1, 0.9]] as const) {
    await h.call("POST", `/api/sdk/runs/${runs[i]}/log`, {
      body: { points: [{ key: "eval/loss", step: 10, value: v }], step: 10 },
    });
  }
  advanceSweeps(h.ctx);
  return { id: created.json.id, runs };
}

Deno.test("the sweep pages show the trials best first, the stopped one with its rung, as text", async () => {
  await withHarness(async (h) => {
    const cookie = await consoleSession(h, "admin");
    const { id, runs } = await sweepWithStop(h);
    const list = await (await page(h, cookie, "/sweeps")).text();
    assertStringIncludes(list, `/sweeps/${id}`);
    assert(!list.includes("<b>sweep</b>"), "a sweep's name is text, not markup");
    const res = await page(h, cookie, `/sweeps/${id}`);
    assertEquals(res.status, 200);
    const html = await res.text();
    assertStringIncludes(html, "lr &lt;b>sweep&lt;/b>");
    assertStringIncludes(html, "at step 10");
    // Best first: the 0.3 trial's run comes before the stopped 0.9 one.
    assert(html.indexOf(runs[0]) < html.indexOf(runs[1]), "trials sorted by the metric");
    assertStringIncludes(html, 'data-island="SweepCharts"');
    assertStringIncludes(html, "Cancel sweep");
  });
});

Deno.test("cancelling a sweep from the console asks first; a read session sees no button and is refused", async () => {
  await withHarness(async (h) => {
    const admin = await consoleSession(h, "admin");
    const { id } = await sweepWithStop(h);
    const ask = await page(h, admin, `/sweeps/${id}/cancel`, { next: `/sweeps/${id}` });
    assertStringIncludes(await ask.text(), `Cancel sweep ${id}?`);
    assertEquals((await h.call("GET", `/api/sweeps/${id}`)).json.status, "RUNNING");

    const read = await consoleSession(h, "read");
    const html = await (await page(h, read, `/sweeps/${id}`)).text();
    assert(!html.includes("Cancel sweep"), "no write control for a read session");
    const refused = await page(h, read, `/sweeps/${id}/cancel`, { confirmed: "1" });
    assertEquals(refused.status, 403);
    assertEquals((await h.call("GET", `/api/sweeps/${id}`)).json.status, "RUNNING");

    const done = await page(h, admin, `/sweeps/${id}/cancel`, {
      next: `/sweeps/${id}`,
      confirmed: "1",
    });
    assertEquals(done.status, 303);
    assertEquals((await h.call("GET", `/api/sweeps/${id}`)).json.status, "CANCELLED");
  });
});
