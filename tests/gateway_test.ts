/** The agent gateway and the scheduler loop, driven by a scripted agent over a real WebSocket. */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import {
  createGatewayHarness,
  eventually,
  FakeAgent,
  FakeClock,
  type GatewayHarness,
} from "./_fake_agent.ts";
import { AgentGateway, type GatewayOptions } from "../server/gateway/gateway.ts";

const gpuJob = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  command: ["python", "train.py"],
  working_dir: "/w",
  gpus: 1,
  ...extra,
});

async function job(h: GatewayHarness, id: string) {
  return (await h.call("GET", `/api/jobs/${id}`)).json;
}

/** A connected agent that was sent one job: the dispatch and the attempt it names. */
async function runningJob(h: GatewayHarness, body = gpuJob("a")) {
  const agent = await connected(h);
  const id = (await h.call("POST", "/api/jobs", { body })).json.id;
  await agent.until((a) => a.of("dispatch").length === 1);
  const dispatch = agent.of("dispatch")[0].job;
  return { agent, id, dispatch, ref: { job_id: id, attempt: 1, run_id: dispatch.run_id } };
}

/** Runs `test` against a gateway harness and stops the harness afterwards. */
async function withGateway(
  test: (h: GatewayHarness) => Promise<void>,
  options?: GatewayOptions,
  clock?: FakeClock,
): Promise<void> {
  const h = await createGatewayHarness(options, clock);
  try {
    await test(h);
  } finally {
    await h.stop();
  }
}

async function connected(
  h: GatewayHarness,
  hello: Parameters<FakeAgent["hello"]>[0] = {},
  token = h.tokens.agent,
): Promise<FakeAgent> {
  const agent = await FakeAgent.connect(h.base, token);
  agent.hello(hello);
  await agent.until((a) => a.of("ack").length === 2);
  return agent;
}

/** A second node, idle, with two free GPUs. */
const nodeB = { node_id: "node-b", hostname: "node-b.test" };

/**
 * Moves the fake clock on in liveness-interval steps (1 s here), with a liveness pass at
 * each, as a server whose loop is never late sees it.
 */
function advance(h: GatewayHarness, clock: FakeClock, ms: number): void {
  for (let left = ms; left > 0; left -= 1000) {
    clock.ms += Math.min(1000, left);
    h.gateway.runOnce();
  }
}

/** node_timeout 15 s, liveness every 1 s, driven by hand with a fake clock. */
const LIVENESS = { nodeTimeoutMs: 15_000, livenessIntervalMs: 1000 };

/**
 * Runs `test` with a job RUNNING on node-a whose agent has then been silent for the node
 * timeout (15 s of the fake clock), so the job is LOST and held.
 */
async function withSilentNode(
  test: (
    h: GatewayHarness,
    silent: Awaited<ReturnType<typeof runningJob>> & { clock: FakeClock },
  ) => Promise<void>,
  body = gpuJob("a"),
): Promise<void> {
  const clock = new FakeClock();
  await withGateway(
    async (h) => {
      const running = await runningJob(h, body);
      running.agent.jobState(running.ref, "RUNNING");
      await eventually(async () => (await job(h, running.id)).status === "RUNNING");
      advance(h, clock, 15_000);
      await test(h, { ...running, clock });
    },
    LIVENESS,
    clock,
  );
}

Deno.test("hello registers the node ONLINE and gets one ack per stream", async () => {
  await withGateway(async (h) => {
    const agent = await connected(h);
    assertEquals(agent.of("ack"), [{ type: "ack", stream: "data", seq: 0 }, {
      type: "ack",
      stream: "sys",
      seq: 0,
    }]);
    const node = (await h.call("GET", "/api/nodes/node-a")).json;
    assertEquals([node.status, node.gpus.length, node.fake_gpus], ["ONLINE", 2, true]);
    const events = (await h.call("GET", "/api/events?type=NODE_ONLINE")).json.items;
    assertEquals(events.length, 1);
    await agent.close();
  });
});

Deno.test("only agent tokens reach the agent socket", async () => {
  await withGateway(async (h) => {
    const res = await fetch(`${h.base}/api/agent/ws`, {
      headers: { authorization: `Bearer ${h.tokens.admin}`, upgrade: "websocket" },
    });
    assertEquals(res.status, 403);
    await res.body?.cancel();
  });
});

Deno.test("three 1-GPU jobs on 2 GPUs: two dispatched on distinct GPUs, the third after one ends", async () => {
  await withGateway(async (h) => {
    const agent = await connected(h);
    const ids: string[] = [];
    for (const n of ["a", "b", "c"]) {
      ids.push((await h.call("POST", "/api/jobs", { body: gpuJob(n) })).json.id);
    }
    await agent.until((a) => a.of("dispatch").length === 2);
    const [d1, d2] = agent.of("dispatch").map((d) => d.job);
    assertEquals([d1.job_id, d2.job_id], [ids[0], ids[1]]);
    assertEquals(new Set([...d1.gpu_indices, ...d2.gpu_indices]), new Set([0, 1]));
    assertEquals((await job(h, ids[2])).status, "QUEUED");
    assertStringIncludes((await job(h, ids[2])).reason, "Cannot place");

    for (const d of [d1, d2]) {
      agent.jobState({ job_id: d.job_id, attempt: 1, run_id: d.run_id }, "RUNNING", { pid: 42 });
    }
    await eventually(async () => (await job(h, ids[1])).status === "RUNNING");
    agent.data({
      type: "logs",
      job_id: d1.job_id,
      attempt: 1,
      run_id: d1.run_id,
      lines: [{ seq: 1, text: "epoch 1" }],
    });
    agent.jobState({ job_id: d1.job_id, attempt: 1, run_id: d1.run_id }, "EXITED", {
      exit_code: 0,
    });
    await agent.until((a) => a.of("dispatch").length === 3);
    const d3 = agent.of("dispatch")[2].job;
    assertEquals([d3.job_id, d3.gpu_indices], [ids[2], d1.gpu_indices]);
    const first = await job(h, ids[0]);
    assertEquals([first.status, first.exit_code, first.failure_class], ["SUCCEEDED", 0, null]);
    const run = (await h.call("GET", `/api/runs/${d1.run_id}`)).json;
    assertEquals([run.status, run.source, run.job_id], ["SUCCEEDED", "job", ids[0]]);
    const logs = (await h.call("GET", `/api/runs/${d1.run_id}/logs`)).json.lines;
    assertEquals(logs.map((l: { text: string }) => l.text), ["epoch 1"]);
    await agent.close();
  });
});

Deno.test("frames are applied once: a replay is acked and ignored", async () => {
  await withGateway(async (h) => {
    const { agent, ref } = await runningJob(h);
    const points = { type: "metrics", ...ref, points: [{ key: "loss", step: 1, value: 2 }] };
    const seq = agent.data(points);
    agent.data({ ...points, points: [{ key: "loss", step: 1, value: 99 }] }, "data", seq);
    await agent.until((a) =>
      a.of("ack").filter((x) => x.stream === "data" && x.seq === seq).length === 2
    );
    const q = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [ref.run_id], keys: ["loss"] },
    });
    assertEquals(q.json.series[0].values, [2]);
    // After a reconnect, the hello's ack carries the cursor.
    await agent.close();
    const again = await FakeAgent.connect(h.base, h.tokens.agent);
    again.hello({ running: [{ ...ref, pid: 1, state: "STARTING" }] });
    await again.until((a) => a.of("ack").length === 2);
    assertEquals(again.of("ack")[0], { type: "ack", stream: "data", seq });
    await again.close();
  });
});

Deno.test("exit classes: EXIT_CODE and OOM are not retried, OOM raises an event, SIGNAL is", async () => {
  await withGateway(async (h) => {
    const agent = await connected(h);
    const cases = [
      {
        name: "exit1",
        state: { exit_code: 1, failure_class: "EXIT_CODE" },
        want: ["FAILED", "EXIT_CODE", 1],
      },
      { name: "oom", state: { exit_code: 1, failure_class: "OOM" }, want: ["FAILED", "OOM", 1] },
      {
        name: "sig",
        state: { exit_code: null, signal: "SIGTERM", failure_class: "SIGNAL" },
        want: ["DISPATCHED", "SIGNAL", 2],
      },
    ];
    for (const c of cases) {
      const id = (await h.call("POST", "/api/jobs", { body: gpuJob(c.name) })).json.id;
      await agent.until((a) => a.of("dispatch").some((d) => d.job.job_id === id));
      const d = agent.of("dispatch").find((x) => x.job.job_id === id)!.job;
      agent.jobState({ job_id: id, attempt: 1, run_id: d.run_id }, "EXITED", { ...c.state });
      // A requeued job is dispatched again at once: the GPU is free.
      await eventually(async () => {
        const j = await job(h, id);
        return j.status === c.want[0] && j.attempt === c.want[2] && j.failure_class === c.want[1];
      });
      const j = await job(h, id);
      assertEquals([j.status, j.failure_class, j.attempt], c.want, c.name);
    }
    const oom = (await h.call("GET", "/api/events?type=OOM")).json.items;
    assertEquals(oom.length, 1);
    assertEquals(oom[0].severity, "critical");
    await agent.close();
  });
});

Deno.test("frames for an old attempt are refused and a stale process is told to die", async () => {
  await withGateway(async (h) => {
    const { agent, id, ref } = await runningJob(h);
    agent.jobState(ref, "EXITED", { exit_code: 1 });
    await eventually(async () => (await job(h, id)).status === "FAILED");
    await h.call("POST", `/api/jobs/${id}/retry`);
    await agent.until((a) => a.of("dispatch").length === 2);
    // A late RUNNING for attempt 1 (a stale copy): refused, and killed.
    agent.jobState(ref, "RUNNING");
    await agent.until((a) => a.of("cancel").length === 1);
    assertEquals(agent.of("cancel")[0].grace_s, 0);
    assertEquals(agent.of("cancel")[0].attempt, 1);
    assert(agent.of("error").some((e) => e.message.includes("is at attempt 2")));
    assertEquals((await job(h, id)).attempt, 2);
    await agent.close();
  });
});

Deno.test("cancel reaches the agent, and the job ends CANCELLED when the agent says so", async () => {
  await withGateway(async (h) => {
    const { agent, id, dispatch: d, ref } = await runningJob(h, gpuJob("a", { grace_s: 7 }));
    agent.jobState(ref, "RUNNING");
    await eventually(async () => (await job(h, id)).status === "RUNNING");
    await h.call("POST", `/api/jobs/${id}/cancel`);
    await agent.until((a) => a.of("cancel").length === 1);
    assertEquals(agent.of("cancel")[0].grace_s, 7);
    agent.jobState(ref, "CANCELLED", {
      signal: "SIGTERM",
    });
    await eventually(async () => (await job(h, id)).status === "CANCELLED");
    assertEquals((await h.call("GET", `/api/runs/${d.run_id}`)).json.status, "CANCELLED");
    await agent.close();
  });
});

Deno.test("a silent node goes OFFLINE, its job is LOST; the agent coming back before its lease expires reattaches, though another node is free", async () => {
  await withSilentNode(async (h, { agent, id, dispatch: d, ref, clock }) => {
    assertEquals((await h.call("GET", "/api/nodes/node-a")).json.status, "OFFLINE");
    const lost = await job(h, id);
    assertEquals([lost.status, lost.attempt, lost.failure_class], ["QUEUED", 2, "NODE_LOST"]);
    assertEquals((await h.call("GET", `/api/runs/${d.run_id}`)).json.status, "LOST");
    const types = (await h.call("GET", `/api/events?job_id=${id}`)).json.items.map((
      e: { type: string },
    ) => e.type);
    assert(types.includes("RUN_LOST") && types.includes("JOB_RETRIED"), types.join());

    // A free node is there, but the lease of node-a has not run out: nothing goes there.
    const b = await connected(h, nodeB);
    assertEquals(h.scheduler.runOnce().dispatched, 0);
    const back = await FakeAgent.connect(h.base, h.tokens.agent);
    back.hello({ running: [{ ...ref, pid: 42, state: "RUNNING" }] });
    await eventually(async () => (await job(h, id)).status === "RUNNING");
    const j = await job(h, id);
    assertEquals([j.attempt, j.run_id, j.gpu_indices, j.not_before], [
      1,
      d.run_id,
      d.gpu_indices,
      null,
    ]);
    advance(h, clock, 10_000); // past the old expiry: still one attempt
    assertEquals(h.scheduler.runOnce().dispatched, 0);
    assertEquals([back.of("dispatch").length, b.of("dispatch").length], [0, 0]);
    assertEquals(back.of("cancel").length, 0);
    await Promise.all([back.close(), b.close(), agent.close()]);
  });
});

Deno.test("fencing: a lost job's next attempt waits for the silent node's lease, then starts on a free node", async () => {
  await withSilentNode(async (h, { agent, id, clock }) => { // node-a: fence_after_s 10, grace 5 s
    // The lease ends 10 s after node-a was last heard, the kill grace 5 s later, plus 5 s:
    // 20 s after the last heartbeat, 12:00:20.
    const held = await job(h, id);
    assertEquals([held.status, held.attempt, held.not_before], [
      "QUEUED",
      2,
      "2026-01-01T12:00:20.000Z",
    ]);
    assertEquals(
      held.reason,
      "node node-a silent 15 s; next attempt at 12:00:20 UTC unless node-a returns",
    );
    const retried = (await h.call("GET", `/api/events?job_id=${id}&type=JOB_RETRIED`)).json
      .items[0];
    assertStringIncludes(retried.message, "next attempt at 12:00:20 UTC unless node-a returns");
    const b = await connected(h, nodeB);
    advance(h, clock, 4_900);
    assertEquals(h.scheduler.runOnce().dispatched, 0);
    assertEquals(b.of("dispatch").length, 0);
    advance(h, clock, 100);
    await b.until((a) => a.of("dispatch").length === 1);
    assertEquals(b.of("dispatch")[0].job.attempt, 2);
    assertEquals((await job(h, id)).not_before, null);
    await Promise.all([agent.close(), b.close()]);
  });
});

Deno.test("fencing: a person's retry starts a held job at once", async () => {
  await withSilentNode(async (h, { agent, id }) => {
    const b = await connected(h, nodeB);
    assertEquals(h.scheduler.runOnce().dispatched, 0);
    const res = await h.call("POST", `/api/jobs/${id}/retry`);
    assertEquals([res.status, res.json.attempt, res.json.not_before], [200, 2, null]);
    await b.until((a) => a.of("dispatch").length === 1);
    assertEquals(b.of("dispatch")[0].job.attempt, 2);
    await Promise.all([agent.close(), b.close()]);
  });
});

Deno.test('fencing: on_node_lost "wait" is never requeued by itself; its node\'s return or a retry goes on', async () => {
  const clock = new FakeClock();
  await withGateway(
    async (h) => {
      const bad = await h.call("POST", "/api/jobs", {
        body: gpuJob("w", { on_node_lost: "later" }),
      });
      assertEquals(bad.status, 400);
      assertStringIncludes(bad.json.error.message, "on_node_lost");
      const { agent, id, ref, dispatch } = await runningJob(
        h,
        gpuJob("w", { on_node_lost: "wait" }),
      );
      assertEquals(dispatch.on_node_lost, "wait");
      assertEquals((await job(h, id)).on_node_lost, "wait");
      agent.jobState(ref, "RUNNING");
      await eventually(async () => (await job(h, id)).status === "RUNNING");
      advance(h, clock, 15_000);
      const b = await connected(h, nodeB);
      advance(h, clock, 60_000 - 15_000);
      b.heartbeat(); // b stays alive through the minute
      advance(h, clock, 10_000);
      assertEquals(h.scheduler.runOnce().dispatched, 0);
      const lost = await job(h, id);
      assertEquals([lost.status, lost.attempt, lost.failure_class], ["LOST", 1, "NODE_LOST"]);
      assertStringIncludes(lost.reason, 'on_node_lost is "wait"');
      assertEquals(b.of("dispatch").length, 0);
      // node-a returns with it: the same attempt goes on.
      const back = await FakeAgent.connect(h.base, h.tokens.agent);
      back.hello({ running: [{ ...ref, pid: 42, state: "RUNNING" }] });
      await eventually(async () => (await job(h, id)).status === "RUNNING");
      assertEquals((await job(h, id)).attempt, 1);
      assertEquals(back.of("cancel").length, 0);
      await Promise.all([agent.close(), back.close(), b.close()]);
    },
    { ...LIVENESS, nodeTimeoutMs: 15_000 },
    clock,
  );
});

Deno.test("fencing: the lost job of an agent that holds no lease is never requeued by itself", async () => {
  const clock = new FakeClock();
  await withGateway(
    async (h) => {
      const agent = await connected(h, { fence_after_s: null });
      const id = (await h.call("POST", "/api/jobs", { body: gpuJob("a") })).json.id;
      await agent.until((a) => a.of("dispatch").length === 1);
      advance(h, clock, 15_000);
      const lost = await job(h, id);
      assertEquals([lost.status, lost.attempt], ["LOST", 1]);
      assertStringIncludes(lost.reason, "holds no lease");
      await agent.close();
    },
    LIVENESS,
    clock,
  );
});

Deno.test("fencing: a stall of the server's own loop is not counted as the nodes' silence", async () => {
  const clock = new FakeClock();
  await withGateway(
    async (h) => {
      const agent = await connected(h);
      clock.ms += 20_000; // the loop was blocked for 20 s: the next pass comes 19 s late
      const pass = h.gateway.runOnce();
      assertEquals([pass.offline, pass.lag_ms], [[], 19_000]);
      advance(h, clock, 13_000); // 14 s of silence the server could see
      assertEquals((await h.call("GET", "/api/nodes/node-a")).json.status, "ONLINE");
      advance(h, clock, 1_000); // 15 s of silence the server could see
      assertEquals((await h.call("GET", "/api/nodes/node-a")).json.status, "OFFLINE");
      await agent.close();
    },
    LIVENESS,
    clock,
  );
});

Deno.test("fencing: after a server restart a held job waits a whole lease again", async () => {
  await withSilentNode(async (h, { agent, id, clock }) => {
    assertEquals((await job(h, id)).not_before, "2026-01-01T12:00:20.000Z");
    h.gateway.stop();
    clock.ms += 3_000; // down 3 s; node-a's agent saw refusals and kept its lease
    const restarted = new AgentGateway(h.ctx, { ...LIVENESS, monotonic: clock.monotonic });
    restarted.start();
    try {
      const held = await job(h, id);
      // From the restart at 12:00:18: 10 s lease + 5 s grace + 5 s margin.
      assertEquals(held.not_before, "2026-01-01T12:00:38.000Z");
      assertStringIncludes(held.reason, "The server restarted while node-a was silent");
    } finally {
      restarted.stop();
    }
    await agent.close();
  });
});

Deno.test("a dispatched job the agent's heartbeats never list is declared gone and requeued", async () => {
  await withGateway(async (h) => {
    const { agent, id } = await runningJob(h);
    agent.heartbeat([]);
    agent.heartbeat([]);
    await eventually(async () => (await job(h, id)).attempt === 2);
    const j = await job(h, id);
    assertEquals(j.failure_class, "AGENT_RESTART");
    // Requeued and dispatched again as attempt 2.
    await agent.until((a) => a.of("dispatch").length === 2);
    assertEquals(agent.of("dispatch")[1].job.attempt, 2);
    await agent.close();
  }, { missedHeartbeats: 2 });
});

Deno.test("an attempt that ended while the server was away is not declared gone while its end frame is still spooled", async () => {
  await withGateway(async (h) => {
    const { agent, id, ref } = await runningJob(h);
    agent.jobState(ref, "RUNNING", { pid: 4242 });
    await eventually(async () => (await job(h, id)).status === "RUNNING");
    // The job ended while the agent was cut off: it no longer lists the attempt, and the frame
    // that says so waits in its spool behind other frames (its heartbeats report a backlog).
    for (let i = 0; i < 4; i++) agent.heartbeat([], { frames: 40, oldest_s: 3 });
    agent.jobState(ref, "EXITED", { exit_code: 0 });
    await eventually(async () => (await job(h, id)).status === "SUCCEEDED");
    const j = await job(h, id);
    assertEquals([j.status, j.attempt, j.failure_class], ["SUCCEEDED", 1, null]);
    assertEquals(agent.of("dispatch").length, 1, "never dispatched again");
    await agent.close();
  }, { missedHeartbeats: 2 });
});

Deno.test("a job that runs after another starts only when it succeeded, and fails when it failed", async () => {
  await withGateway(async (h) => {
    const agent = await connected(h);
    const train = (await h.call("POST", "/api/jobs", { body: gpuJob("train") })).json.id;
    const evalJob =
      (await h.call("POST", "/api/jobs", { body: gpuJob("eval", { after: [train] }) })).json.id;
    await agent.until((a) => a.of("dispatch").length === 1);
    // A pass with a GPU free places nothing: eval waits for train.
    assertEquals(h.scheduler.runOnce(), {
      dispatched: 0,
      waiting: 1,
      dependency_failures: 0,
    });
    assertEquals(agent.of("dispatch").length, 1, "eval waits for train");
    assertStringIncludes((await job(h, evalJob)).reason, "Waiting");
    const d = agent.of("dispatch")[0].job;
    agent.jobState({ job_id: train, attempt: 1, run_id: d.run_id }, "EXITED", { exit_code: 0 });
    await agent.until((a) => a.of("dispatch").length === 2);
    assertEquals(agent.of("dispatch")[1].job.job_id, evalJob);

    const bad = (await h.call("POST", "/api/jobs", { body: gpuJob("bad") })).json.id;
    const after =
      (await h.call("POST", "/api/jobs", { body: gpuJob("after-bad", { after: [bad] }) })).json.id;
    await agent.until((a) => a.of("dispatch").some((x) => x.job.job_id === bad));
    const db = agent.of("dispatch").find((x) => x.job.job_id === bad)!.job;
    agent.jobState({ job_id: bad, attempt: 1, run_id: db.run_id }, "EXITED", { exit_code: 2 });
    await eventually(async () => (await job(h, after)).status === "FAILED");
    assertStringIncludes((await job(h, after)).reason, `Dependency "${bad}" ended FAILED`);
    await agent.close();
  });
});

Deno.test("a frame the server cannot store (a full disk) is replayed after a reconnect, never skipped", async () => {
  await withGateway(async (h) => {
    const { agent, ref } = await runningJob(h);
    const logs = (first: number, n: number, size: number) => ({
      type: "logs",
      ...ref,
      lines: Array.from({ length: n }, (_, i) => ({
        seq: first + i,
        stream: "stdout",
        text: `line ${first + i} ${"x".repeat(size)}`,
      })),
    });
    const first = agent.data(logs(1, 2, 10));
    await agent.until((a) => a.of("ack").some((x) => x.stream === "data" && x.seq === first));

    // The disk fills up: the database may not grow by a single page.
    const sqlite = h.ctx.db.sqlite;
    const pages = (sqlite.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
    sqlite.exec(`PRAGMA max_page_count = ${pages}`);
    const big = logs(3, 200, 2000); // needs new pages: fails
    const small = logs(203, 1, 10); // fits in a page that has room: must not be applied first
    agent.data(big);
    agent.data(small);
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      agent.closed,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error("the server kept the connection open")), 5000);
      }),
    ]).finally(() => clearTimeout(timer));
    assertEquals(
      agent.of("ack").filter((x) => x.stream === "data").map((x) => x.seq),
      [0, first],
      "nothing after the failed frame was acknowledged",
    );

    // Space is freed; the agent reconnects and replays from the server's cursor.
    sqlite.exec("PRAGMA max_page_count = 1073741823");
    const again = await FakeAgent.connect(h.base, h.tokens.agent);
    again.hello({ running: [{ ...ref, pid: 1, state: "RUNNING" }] });
    await again.until((a) => a.of("ack").length === 2);
    assertEquals(again.of("ack")[0], { type: "ack", stream: "data", seq: first });
    again.data(big, "data", first + 1);
    again.data(small, "data", first + 2);
    await again.until((a) => a.of("ack").some((x) => x.stream === "data" && x.seq === first + 2));
    const stored = await h.call("GET", `/api/runs/${ref.run_id}/logs?limit=1000`);
    assertEquals(
      stored.json.lines.map((l: { seq: number }) => l.seq),
      Array.from({ length: 203 }, (_, i) => i + 1),
    );
    await again.close();
  });
});

Deno.test("a frame that fails for its own sake is skipped, and the frames after it still flow", async () => {
  await withGateway(async (h) => {
    const { agent, ref } = await runningJob(h);
    // A frame the server cannot apply however often it is sent (here a trigger refuses it):
    // replaying it forever would stall the node, so it is reported and passed over.
    h.ctx.db.sqlite.exec(
      `CREATE TEMP TRIGGER poison BEFORE INSERT ON logs WHEN NEW.text = 'poison'
     BEGIN SELECT RAISE(ABORT, 'poison line'); END`,
    );
    const line = (seq: number, text: string) => ({
      type: "logs",
      ...ref,
      lines: [{ seq, stream: "stdout", text }],
    });
    agent.data(line(1, "poison"));
    const after = agent.data(line(2, "fine"));
    await agent.until((a) => a.of("ack").some((x) => x.stream === "data" && x.seq === after));
    assertEquals(agent.of("error").length, 1);
    const stored = await h.call("GET", `/api/runs/${ref.run_id}/logs`);
    assertEquals(stored.json.lines.map((l: { text: string }) => l.text), ["fine"]);
    await agent.close();
  });
});

Deno.test("a frame far ahead of a node's cursor is refused and does not poison it: the node's next job runs once", async () => {
  await withGateway(async (h) => {
    const hostile = await connected(h, nodeB);
    // Under node-b: the frame would move node-b's cursor past every frame node-b will send.
    hostile.data(
      {
        type: "event",
        event: { type: "POISON", severity: "info", message: "x" },
      },
      "data",
      Number.MAX_SAFE_INTEGER,
    );
    await hostile.until((a) => a.of("error").length === 1);
    assertStringIncludes(hostile.of("error")[0].message, 'ahead of node "node-b"\'s cursor 0');
    assertEquals(hostile.of("ack").length, 2); // the hello's two: the frame is not acked
    await hostile.close();

    const agent = await connected(h, nodeB);
    const id = (await h.call("POST", "/api/jobs", { body: gpuJob("after") })).json.id;
    await agent.until((a) => a.of("dispatch").length === 1);
    const d = agent.of("dispatch")[0].job;
    const ref = { job_id: id, attempt: 1, run_id: d.run_id };
    agent.jobState(ref, "RUNNING");
    agent.heartbeat([ref]);
    agent.heartbeat([ref]);
    agent.jobState(ref, "EXITED", { exit_code: 0 });
    await eventually(async () => (await job(h, id)).status === "SUCCEEDED");
    assertEquals((await job(h, id)).attempt, 1);
    assertEquals(agent.of("dispatch").length, 1);
    assertEquals(agent.of("error"), []);
    await agent.close();
  });
});

Deno.test("a node's own agent token speaks only for that node, and then the shared token no longer can", async () => {
  await withGateway(async (h) => {
    const wrong = await h.call("POST", "/api/tokens", {
      body: { name: "b", scope: "write", node_id: "node-b" },
    });
    assertEquals(wrong.status, 400);
    assertStringIncludes(wrong.json.error.message, "node_id");
    const created = await h.call("POST", "/api/tokens", {
      body: { name: "node-b agent", scope: "agent", node_id: "node-b" },
    });
    assertEquals([created.status, created.json.node_id], [201, "node-b"]);
    const listed = (await h.call("GET", "/api/tokens")).json.items;
    const agentTokens = listed.filter((t: { scope: string }) => t.scope === "agent").map((
      t: { node_id: string | null },
    ) => t.node_id).sort();
    assertEquals(agentTokens, ["node-b", null]); // the shared one is node_id null

    const impostor = await FakeAgent.connect(h.base, created.json.token);
    impostor.hello(); // as node-a
    assertEquals(await impostor.closed, 4003);
    assertStringIncludes(impostor.of("error")[0].message, 'the token is bound to node "node-b"');

    const shared = await FakeAgent.connect(h.base, h.tokens.agent);
    shared.hello(nodeB);
    assertEquals(await shared.closed, 4003);
    assertStringIncludes(shared.of("error")[0].message, "has its own agent token");

    const own = await connected(h, nodeB, created.json.token);
    assertEquals((await h.call("GET", "/api/nodes/node-b")).json.status, "ONLINE");
    await own.close();
  });
});

Deno.test("a second live connection for a node is refused; the first keeps the node until it is gone", async () => {
  const clock = new FakeClock();
  await withGateway(
    async (h) => {
      const first = await connected(h);
      first.heartbeat();
      await first.until((a) => a.of("lease").length === 2); // the hello's and the heartbeat's
      clock.ms += 10_000;
      first.heartbeat(); // heartbeats 10 s apart: gone after 20 s of silence
      await first.until((a) => a.of("lease").length === 3);
      clock.ms += 5_000;
      const second = await FakeAgent.connect(h.base, h.tokens.agent);
      second.hello({ gpus: [] });
      assertEquals(await second.closed, 4003);
      assertStringIncludes(
        second.of("error")[0].message,
        'node "node-a" already has a live connection',
      );
      assertEquals((await h.call("GET", "/api/nodes/node-a")).json.gpus.length, 2);

      clock.ms += 16_000; // 21 s without a word: the agent gave up on that connection
      const third = await connected(h);
      assertEquals(await first.closed, 4000);
      await third.close();
    },
    {},
    clock,
  );
});

Deno.test("a node's own token may replace its live connection (its agent gave up on it)", async () => {
  await withGateway(async (h) => {
    const token = (await h.call("POST", "/api/tokens", {
      body: { name: "a", scope: "agent", node_id: "node-a" },
    })).json.token;
    const first = await connected(h, {}, token);
    const again = await connected(h, {}, token);
    assertEquals(await first.closed, 4000);
    await again.close();
  });
});

Deno.test("an oversize frame closes the connection", async () => {
  await withGateway(async (h) => {
    const agent = await connected(h);
    agent.send({ type: "heartbeat", pad: "x".repeat(17 * 1024 * 1024) });
    assertEquals(await agent.closed, 1009);
    assertStringIncludes(agent.of("error")[0].message, "larger than");
  });
});

Deno.test("fencing: the silent node returning with its fenced attempt ended releases the held job at once", async () => {
  await withSilentNode(async (h, { agent, ref, clock }) => {
    const b = await connected(h, nodeB);
    assertEquals(h.scheduler.runOnce().dispatched, 0);
    // node-a's agent fenced attempt 1 while out of contact; back, it replays the end.
    const back = await FakeAgent.connect(h.base, h.tokens.agent);
    back.hello();
    await back.until((a) => a.of("ack").length === 2);
    back.data(
      {
        type: "job_state",
        ...ref,
        state: "EXITED",
        ts: clock.now().getTime() / 1000,
        exit_code: null,
        signal: "SIGTERM",
        failure_class: "NODE_LOST",
        reason: "stopped by its agent: no contact with the server for 11 s (fence_after_s 10)",
      },
      "data",
      2,
    );
    await eventually(() =>
      [...back.of("dispatch"), ...b.of("dispatch")].some((d) => d.job.attempt === 2)
    );
    await Promise.all([agent.close(), back.close(), b.close()]);
  });
});

Deno.test("fencing: a job kept LOST (wait) ends as its returning node reports", async () => {
  await withSilentNode(async (h, { agent, id, ref }) => {
    assertEquals((await job(h, id)).status, "LOST");
    const back = await FakeAgent.connect(h.base, h.tokens.agent);
    back.hello(); // it finished while the node was cut off
    await back.until((a) => a.of("ack").length === 2);
    back.data({ type: "job_state", ...ref, state: "EXITED", ts: 1, exit_code: 0 }, "data", 2);
    await eventually(async () => (await job(h, id)).status === "SUCCEEDED");
    assertEquals((await job(h, id)).attempt, 1);
    await Promise.all([agent.close(), back.close()]);
  }, gpuJob("w", { on_node_lost: "wait" }));
});
