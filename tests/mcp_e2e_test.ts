/**
 * The experiment loop an LLM agent runs, with MCP tools alone, against a real server and a
 * real agent with fake GPUs: two synthetic runs with different learning rates → wait_for_run →
 * compare_runs → evaluate_checkpoint on the better run's last two checkpoints →
 * get_best_checkpoint; a NaN run wakes wait_for_run before it ends; the same answers over
 * `gpuctl mcp stdio`; a read token cannot submit.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { startCluster, taskArgs, until } from "./_processes.ts";
import { call, httpClient } from "./_mcp_client.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const TRAIN = `${ROOT}/examples/synthetic/train.py`;

// The held-out score of a checkpoint: the loss its file recorded, a little worse.
const EVAL = "import json, os; ck = json.load(open(os.environ['GPUCTL_CHECKPOINT_PATH'])); " +
  "json.dump({'metrics': {'heldout/loss': ck['loss'] * 1.1}}, " +
  "open(os.environ['GPUCTL_EVAL_OUTPUT'], 'w'))";

// deno-lint-ignore no-explicit-any -- tests read arbitrary structured answers
type Any = any;

Deno.test("an MCP client runs submit → wait → compare → evaluate → recommend; a NaN wakes the wait; stdio answers the same; a read token cannot submit", async () => {
  const c = await startCluster({ fakeGpus: 2, prefix: "gpuctl-e2e-mcp-" });
  const token = async (scope: string) =>
    (await c.call("POST", "/api/tokens", { name: `mcp-${scope}`, scope })).json.token;
  const write = await token("write");
  const read = await token("read");
  try {
    await using agent = await httpClient(c.server.url, write);
    const submit = (name: string, args: string[]) =>
      call(agent, "submit_job", {
        name,
        command: ["python3", TRAIN, ...args],
        working_dir: c.home,
        gpus: 1,
        project: "synth",
        experiment: "lr-sweep",
      });
    const wait = (args: Record<string, unknown>) =>
      call(agent, "wait_for_run", { timeout_s: 120, ...args }, 150_000);
    const common = ["--steps", "60", "--ckpt-every", "20", "--sleep", "0.01"];

    // Two learning rates, side by side on the two fake GPUs.
    const slow = await submit("lr-0.02", [...common, "--lr", "0.02"]);
    const fast = await submit("lr-0.1", [...common, "--lr", "0.1"]);
    assertEquals(slow.next_actions[0].tool, "wait_for_run");
    const slowDone = await wait(slow.next_actions[0].args);
    const fastDone = await wait(fast.next_actions[0].args);
    assertEquals(
      [slowDone.reason, slowDone.status],
      ["finished", "SUCCEEDED"],
      JSON.stringify(slowDone),
    );
    assertEquals(
      [fastDone.reason, fastDone.status],
      ["finished", "SUCCEEDED"],
      JSON.stringify(fastDone),
    );
    assert(fastDone.diagnosis.summary.length > 0);

    const compared = await call(agent, "compare_runs", {
      runs: [slowDone.run_id, fastDone.run_id],
    });
    assertEquals(compared.ranking[0], fastDone.run_id, compared.summary);
    assert(
      compared.config_diff.some((d: Any) => d.key.endsWith("lr")),
      JSON.stringify(compared.config_diff),
    );
    const best = compared.ranking[0];

    // Its last two checkpoints (steps 40 and 59), evaluated on a held-out suite.
    const checkpoints = await until(
      async () => {
        const items = (await call(agent, "list_checkpoints", { run_id: best })).items;
        return items.length >= 3 ? items : null;
      },
      15_000,
      "three checkpoints",
    );
    const lastTwo = checkpoints.slice(-2);
    const scores: Record<string, number> = {};
    for (const ck of lastTwo) {
      const queued = await call(agent, "evaluate_checkpoint", {
        checkpoint_id: ck.id,
        suite: "heldout",
        command: ["python3", "-c", EVAL],
      });
      const done = await wait(queued.next_actions[0].args);
      assertEquals(done.status, "SUCCEEDED", JSON.stringify(done));
    }
    const evaluated = await until(
      async () => {
        const items = (await call(agent, "list_checkpoints", { run_id: best })).items.slice(-2);
        return items.every((k: Any) => k.evaluations[0]?.status === "COMPLETED") ? items : null;
      },
      15_000,
      "evaluations completed",
    );
    for (const k of evaluated) scores[k.id] = k.evaluations[0].metrics["heldout/loss"];
    const expected = Object.entries(scores).sort((a, b) => a[1] - b[1])[0][0];

    const pick = await call(agent, "get_best_checkpoint", { experiment: "synth/lr-sweep" });
    assertEquals(pick.checkpoint.checkpoint_id, expected, pick.summary);
    assertEquals([pick.checkpoint.run_id, pick.basis, pick.suite], [best, "evaluation", "heldout"]);
    assertStringIncludes(pick.reason, "heldout");
    const ofRun = await call(agent, "get_best_checkpoint", { run_id: best });
    assertEquals(ofRun.checkpoint.checkpoint_id, expected);

    // A NaN at step 40 of 400 wakes the wait long before the run would end.
    const nan = await submit("nan", ["--steps", "400", "--sleep", "0.05", "--nan-at", "40"]);
    const woken = await wait(nan.next_actions[0].args);
    assertEquals([woken.reason, woken.event?.type], ["anomaly", "LOSS_NAN"], JSON.stringify(woken));
    assertEquals(woken.status, "RUNNING");
    assert(woken.step < 400);
    assert(
      woken.next_actions.some((a: Any) => a.tool === "cancel_job"),
      JSON.stringify(woken.next_actions),
    );
    const cancelled = await call(agent, "cancel_job", { job_id: nan.id });
    assertEquals(cancelled.id, nan.id);
    assertEquals((await wait({ job_id: nan.id })).status, "CANCELLED");

    // The same client over `gpuctl mcp stdio`: the same tools, the same answers.
    const stdio = new Client({ name: "gpuctl-test", version: "0" });
    await stdio.connect(
      new StdioClientTransport({
        command: Deno.execPath(),
        args: [...taskArgs("cli"), "mcp", "stdio", "--server", c.server.url, "--token", write],
        cwd: ROOT,
        env: { NO_COLOR: "1", GPUCTL_HOME: `${c.home}/cli-home`, PATH: Deno.env.get("PATH") ?? "" },
        stderr: "pipe",
      }),
    );
    try {
      const overStdio = await stdio.listTools();
      const overHttp = await agent.listTools();
      assertEquals(overStdio.tools.length, 29);
      assertEquals(overStdio.tools, overHttp.tools);
      for (
        const [tool, args] of [
          ["compare_runs", { runs: [slowDone.run_id, fastDone.run_id] }],
          ["get_best_checkpoint", { experiment: "synth/lr-sweep" }],
          ["list_checkpoints", { run_id: best }],
        ] as const
      ) {
        assertEquals(await call(stdio, tool, args), await call(agent, tool, args), tool);
      }
    } finally {
      await stdio.close();
    }

    // A read token: submit_job is refused with WriteScopeError and nothing is queued.
    await using reader = await httpClient(c.server.url, read);
    const jobsBefore = (await call(reader, "list_jobs", { limit: 1000 })).items.length;
    const refused: Any = await reader.callTool({
      name: "submit_job",
      arguments: { name: "x", command: ["true"], working_dir: c.home, gpus: 0 },
    });
    assertEquals(refused.isError, true);
    assertStringIncludes(refused.content[0].text, "WriteScopeError");
    assertStringIncludes(refused.content[0].text, "write");
    assertEquals((await call(reader, "list_jobs", { limit: 1000 })).items.length, jobsBefore);
  } finally {
    await c.stop();
  }
});
