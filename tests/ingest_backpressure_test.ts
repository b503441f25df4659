/**
 * A server that falls behind says so: with each commit slowed on purpose in the store layer (a
 * hook that holds every COMMIT), `GET /api/status` and the Nodes page show how far behind it is
 * and what its agents hold back, and once it has caught up, that it is up to date again. (That
 * agents send less meanwhile is `agent/connection_test.ts`'s.)
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createGatewayHarness, eventually, FakeAgent, heartbeatFrame } from "./_fake_agent.ts";
import { consoleSession } from "./_harness.ts";

/** Holds the thread for `ms`, as a slow disk holds a COMMIT. */
function hold(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) { /* the store is slow */ }
}

Deno.test("a slowed store: GET /api/status and the Nodes page say how far behind the server is, then that it caught up", async () => {
  // Small groups, so that a backlog takes many commits.
  const h = await createGatewayHarness({ ingest: { maxFrames: 2 } });
  try {
    const agent = await FakeAgent.connect(h.base, h.tokens.agent);
    agent.hello();
    await agent.until((a) => a.of("ack").length === 2);
    const id = (await h.call("POST", "/api/jobs", {
      body: { name: "slow", command: ["true"], working_dir: "/w", gpus: 1 },
    })).json.id;
    await agent.until((a) => a.of("dispatch").length === 1);
    const ref = { job_id: id, attempt: 1, run_id: agent.of("dispatch")[0].job.run_id };
    agent.jobState(ref, "RUNNING", { pid: 1 });

    const status = async () => (await h.call("GET", "/api/status")).json.ingest;
    const cookie = await consoleSession(h, "read");
    const nodesPage = async () =>
      (await h.call("GET", "/nodes", { token: null, headers: { cookie } })).text;
    await eventually(async () => (await status()).pending_frames === 0);
    assertStringIncludes(await nodesPage(), "up to date");

    let slow = true;
    h.ctx.db.beforeCommit(() => {
      if (slow) hold(40);
    });
    // The agent reports what it holds back in its spool, then sends a burst.
    agent.send({ ...heartbeatFrame([ref]), backlog: { frames: 500, oldest_s: 4 } });
    const frames = 120;
    let last = 0;
    for (let step = 1; step <= frames; step++) {
      last = agent.data({
        type: "metrics",
        ...ref,
        points: [{ key: "loss", step, value: 1 / step }],
      });
    }
    // While it works through them (a commit of 2 frames every 40 ms or more), it says so.
    const behind = await eventually(async () => {
      const s = await status();
      return s.pending_frames > 0 && s.behind_s > 0 ? s : null;
    }, 20_000);
    assert(behind.behind_s >= 4, `behind ${behind.behind_s} s: at least the agent's oldest frame`);
    assertEquals(behind.nodes[0].node_id, "node-a");
    assertEquals(behind.nodes[0].unsent_frames, 500);
    assertEquals(behind.unsent_frames, 500);
    const page = await nodesPage();
    assertStringIncludes(page, "The server is behind storing agents");
    assertStringIncludes(page, "node-a: 500 frames");

    // It catches up; the agent's next heartbeat says it holds nothing back.
    await agent.until(
      (a) => a.of("ack").some((x) => x.stream === "data" && x.seq === last),
      30_000,
    );
    slow = false;
    agent.send({ ...heartbeatFrame([ref]), backlog: { frames: 0, oldest_s: 0 } });
    const caughtUp = await eventually(async () => {
      const s = await status();
      return s.unsent_frames === 0 && s.pending_frames === 0 ? s : null;
    });
    assertEquals(caughtUp.nodes, []);
    // The waits of the last 10 s still show; the page no longer shows a backlog of frames.
    assert(caughtUp.frames_per_s > 0);
    assert(!(await nodesPage()).includes("node-a: 500 frames"));
    const stored = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [ref.run_id], keys: ["loss"] },
    });
    assertEquals(stored.json.series[0].steps.length, frames);
    await agent.close();
  } finally {
    await h.stop();
  }
});
