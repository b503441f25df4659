/**
 * A sweep end to end with real processes: a 6-trial random sweep of the synthetic example
 * over `--lr`, two at a time, with successive halving, on an agent with fake GPUs.
 */
import { assert, assertEquals } from "./assert.ts";
import { startCluster, until } from "./_processes.ts";
import { expandTrials } from "../server/sweeps/expand.ts";
import { runInProcess } from "../cli/_test_server.ts";
import { call, httpClient } from "./_mcp_client.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const STEPS = 120;

/** The synthetic example's eval loss without noise (examples/synthetic/train.py). */
function syntheticEvalLoss(lr: number, step: number): number {
  const excess = lr > 0.1 ? Math.log(lr / 0.1) : 0;
  return 2.1 * Math.exp(-lr * step / 10) + 0.08 +
    0.5 * excess * excess * (1 + 0.3 * Math.sin(step / 3));
}

Deno.test("a random lr sweep runs two trials at a time, stops losers at rungs and finds the best rate", async () => {
  const c = await startCluster({ fakeGpus: 4, prefix: "gpuctl-e2e-sweep-" });
  try {
    const parameters = { lr: { distribution: "log_uniform" as const, min: 0.003, max: 1 } };
    const created = await c.call("POST", "/api/sweeps", {
      name: "lr-search",
      project: "sweeps",
      base: {
        name: "synthetic",
        command: [
          "python3",
          `${ROOT}/examples/synthetic/train.py`,
          "--steps",
          String(STEPS),
          "--sleep",
          "0.03",
          "--eval-every",
          "10",
        ],
        working_dir: c.home,
        gpus: 1,
      },
      parameters,
      method: "random",
      runs: 6,
      seed: 5,
      max_parallel: 2,
      metric: "eval/loss",
      early_stop: { min_steps: 40, every: 40, keep_fraction: 0.5 },
    });
    assertEquals(created.status, 201, created.text);
    const id = created.json.id;

    // While it runs: never more than two trials holding slots at once.
    let most = 0;
    const done = await until(
      async () => {
        const s = (await c.call("GET", `/api/sweeps/${id}`)).json;
        const active = s.trials.filter((t: { status: string; job_id: string }) =>
          ["QUEUED", "DISPATCHED", "RUNNING"].includes(t.status)
        ).length;
        most = Math.max(most, active);
        return s.status !== "RUNNING" ? s : null;
      },
      120_000,
      "the sweep ended",
    );

    assert(most <= 2, `${most} trials were active at once`);
    assertEquals(done.status, "SUCCEEDED", done.summary);
    const stopped = done.trials.filter((t: { status: string }) =>
      t.status === "STOPPED"
    );
    assert(stopped.length >= 2, `${stopped.length} trials stopped: ${done.summary}`);
    for (const t of stopped) {
      assert([40, 80].includes(t.stopped_at), String(t.stopped_at));
      const job = (await c.call("GET", `/api/jobs/${t.job_id}`)).json;
      assertEquals(job.status, "CANCELLED");
      assert(job.reason.includes(`stopped at rung ${t.stopped_at}`), job.reason);
    }
    // The run of each trial records its parameters.
    const run = (await c.call("GET", `/api/runs/${done.trials[0].run_id}`)).json;
    assertEquals(run.config.lr, done.trials[0].params.lr);

    // The best trial is the rate the synthetic loss makes best.
    const expansion = expandTrials(parameters, "random", { runs: 6, seed: 5 });
    if (!("trials" in expansion)) throw new Error("no trials");
    const lrs = expansion.trials.map((t) => t.lr as number);
    assertEquals(done.trials.map((t: { params: { lr: number } }) => t.params.lr), lrs);
    const bestLr = lrs.reduce((a, b) =>
      syntheticEvalLoss(a, STEPS) <= syntheticEvalLoss(b, STEPS) ? a : b
    );
    assertEquals(done.best.params.lr, bestLr, done.summary);
    assertEquals(done.importance[0].parameter, "lr");

    // The CLI, the MCP tools and the console give the same answer.
    const env = { GPUCTL_SERVER_URL: c.server.url, GPUCTL_TOKEN: c.server.adminToken };
    const shown = await runInProcess(["sweep", "show", id, "--json"], env);
    assertEquals(shown.code, 0, shown.stderr);
    assertEquals(JSON.parse(shown.stdout), done);
    const table = await runInProcess(["sweep", "show", id], env);
    assert(table.stdout.includes(`trial ${done.best.index + 1}`), table.stdout);
    await using mcp = await httpClient(c.server.url, c.server.adminToken);
    assertEquals(await call(mcp, "get_sweep", { sweep_id: id }), done);
    const waited = await call(mcp, "wait_for_run", { sweep_id: id, timeout_s: 5 });
    assertEquals([waited.reason, waited.sweep.best], ["finished", done.best]);
    const login = await fetch(`${c.server.url}/login`, {
      method: "POST",
      headers: { origin: c.server.url },
      body: new URLSearchParams({ token: c.server.adminToken }),
      redirect: "manual",
    });
    await login.body?.cancel();
    const cookie = login.headers.get("set-cookie")!.split(";")[0];
    const html = await (await fetch(`${c.server.url}/sweeps/${id}`, { headers: { cookie } }))
      .text();
    // The console's table is best first: the best trial's run is the first run linked.
    const firstRun = /href="\/runs\/(r-[a-z0-9]+)"/.exec(html)?.[1];
    assertEquals(firstRun, done.best.run_id);
  } finally {
    await c.stop();
  }
});
