/**
 * The agent loop of `deno task bench:agent-loop`, run briefly against real processes (a server,
 * an agent with 2 fake GPUs, a git repository): what a user of the loop would check afterwards.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { assert, assertEquals } from "./assert.ts";
import { startLoopCluster } from "../bench/agent_loop/cluster.ts";
import { runLoop } from "../bench/agent_loop/loop.ts";
import { checkCode, idleFraction, peakConcurrency, runFacts } from "../bench/agent_loop/measure.ts";
import { TrainingRepo } from "../bench/agent_loop/work_tree.ts";

Deno.test("idleFraction() counts the GPU time no run held inside the window", () => {
  const runs = [{ start: 0, end: 50 }, { start: 40, end: null }, { start: -10, end: 5 }];
  // Held: 50 + 60 (open run counts to the window's end) + 5 of 2 × 100.
  assertEquals(idleFraction(runs, 2, 0, 100), 1 - 115 / 200);
  assertEquals(idleFraction([], 4, 0, 100), 1);
  assertEquals(peakConcurrency(runs), 2);
});

/**
 * `client` with its `callTool` answering `text` as a tool error for the submissions past the
 * first `n`: the refusal a server with token budgets sends, for the loop's side of it.
 */
function refusingSubmissionsAfter(client: Client, n: number, text: string): Client {
  let submitted = 0;
  return new Proxy(client, {
    get(target, prop) {
      if (prop === "callTool") {
        return (params: { name: string }, ...rest: unknown[]) => {
          if (["submit_job", "fork_run"].includes(params.name) && ++submitted > n) {
            return Promise.resolve({ isError: true, content: [{ type: "text", text }] });
          }
          // deno-lint-ignore no-explicit-any -- passes the SDK's own arguments through
          return (target.callTool as any)(params, ...rest);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}

Deno.test("the agent loop forks from the best kept run, fills the GPUs, and every run's code checks out as it ran", async () => {
  const c = await startLoopCluster(2);
  try {
    const repo = await TrainingRepo.create(c.home);
    await using client = await c.client();
    const r = await runLoop({
      client,
      repo,
      project: "loop",
      experiment: "test",
      durationMs: 120_000,
      maxExperiments: 5,
      finishInFlight: true,
      steps: 6,
      stepS: 0.1,
      seed: 3,
      codeEvery: 2,
    });
    assertEquals(r.stop.kind, "count");
    assertEquals(r.slots, 2, "the loop read the cluster's GPUs from get_status");
    assertEquals(r.experiments.length, 5);
    const facts = await runFacts(c.call, r.experiments);
    assertEquals(facts.length, 5, "every experiment got a run");
    for (const f of facts) {
      assert(f.mark !== null, `run ${f.exp.runId} (${f.exp.idea}) is marked kept or discarded`);
      assert(f.mark.reason.length > 0);
    }
    assert(facts.some((f) => f.mark?.mark === "kept"), "something was kept");

    // Each fork's parent is the best kept run (lowest eval/loss) among those marked kept
    // before the fork was submitted.
    const forks = facts.filter((f) => f.parentRun !== null);
    assert(forks.length >= 2, `forks: ${forks.length}`);
    for (const f of forks) {
      const keptBefore = facts.filter((k) =>
        k.mark?.mark === "kept" && Date.parse(k.mark.at) <= Date.parse(f.submittedAt)
      );
      const best = keptBefore.reduce((a, b) => (b.value! < a.value! ? b : a));
      assertEquals(f.parentRun, best.exp.runId, `parent of ${f.exp.name}`);
    }
    assert(r.experiments.some((e) => e.kind === "code"), "a code edit was tried");
    assert(r.experiments.some((e) => e.kind === "config"), "a config change was tried");

    // The GPUs were used: both at once, each GPU by some run.
    const busy = facts.map((f) => f.busy).filter((b) => b !== null);
    assertEquals(peakConcurrency(busy), 2);
    assertEquals(new Set(facts.map((f) => f.gpus)), new Set(["0", "1"]));

    // Every run's code checks out again as the bytes it ran.
    const checks = await checkCode(
      facts,
      { url: c.server.url, token: c.server.adminToken },
      `${c.home}/checkouts`,
    );
    assertEquals(checks.filter((x) => !x.ok), []);
    assert(facts.every((f) => f.ranSha !== null), "every run printed the hash of its code");

    // A submission refused for a budget stops the loop there, with the error's text; the runs in
    // flight are still judged.
    const refusal = 'BudgetExceeded: token "agent-loop" may submit 2 runs; 2 submitted';
    const b = await runLoop({
      client: refusingSubmissionsAfter(client, 2, refusal),
      repo,
      project: "loop",
      experiment: "budget",
      durationMs: 120_000,
      steps: 6,
      stepS: 0.1,
    });
    assertEquals(b.stop, { kind: "budget", tool: "submit_job", error: refusal });
    assertEquals(b.experiments.length, 2);
    for (const e of b.experiments) {
      assert(e.outcome === "kept" || e.outcome === "discarded", e.name);
    }
  } finally {
    await c.cancelLeftovers();
    await c.stop();
  }
});
