/** The agent gateway and the scheduler loop, driven by a scripted agent over a real WebSocket. */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createGatewayHarness, eventually, FakeAgent, type GatewayHarness } from "./_fake_agent.ts";
import type { GatewayOptions } from "../server/gateway/gateway.ts";

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
): Promise<void> {
  const h = await createGatewayHarness(options);
  try {
    await test(h);
  } finally {
    await h.stop();
  }
}

async function connected(h: GatewayHarness): Promise<FakeAgent> {
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  agent.hello();
  await agent.until((a) => a.of("ack").length === 2);
  return agent;
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

Deno.test("a silent node goes OFFLINE, its job is LOST and requeued; the agent coming back reattaches", async () => {
  let clock = 0;
  await withGateway(async (h) => {
    const { agent, id, dispatch: d, ref } = await runningJob(h);
    agent.jobState(ref, "RUNNING");
    await eventually(async () => (await job(h, id)).status === "RUNNING");
    clock += 2000;
    await eventually(async () =>
      (await h.call("GET", "/api/nodes/node-a")).json.status === "OFFLINE"
    );
    const lost = await job(h, id);
    assertEquals([lost.status, lost.attempt, lost.failure_class], ["QUEUED", 2, "NODE_LOST"]);
    assertEquals((await h.call("GET", `/api/runs/${d.run_id}`)).json.status, "LOST");
    const types = (await h.call("GET", `/api/events?job_id=${id}`)).json.items.map((
      e: { type: string },
    ) => e.type);
    assert(types.includes("RUN_LOST") && types.includes("JOB_RETRIED"), types.join());

    // No other node: nothing placed it elsewhere, so the returning agent keeps its attempt.
    const back = await FakeAgent.connect(h.base, h.tokens.agent);
    back.hello({
      running: [{ ...ref, pid: 42, state: "RUNNING" }],
    });
    await eventually(async () => (await job(h, id)).status === "RUNNING");
    const j = await job(h, id);
    assertEquals([j.attempt, j.run_id, j.gpu_indices], [1, d.run_id, d.gpu_indices]);
    assertEquals(back.of("dispatch").length, 0);
    assertEquals(back.of("cancel").length, 0);
    await back.close();
    await agent.close();
  }, { nodeTimeoutMs: 1000, livenessIntervalMs: 50, monotonic: () => clock });
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

Deno.test("a job that runs after another starts only when it succeeded, and fails when it failed", async () => {
  await withGateway(async (h) => {
    const agent = await connected(h);
    const train = (await h.call("POST", "/api/jobs", { body: gpuJob("train") })).json.id;
    const evalJob =
      (await h.call("POST", "/api/jobs", { body: gpuJob("eval", { after: [train] }) })).json.id;
    await agent.until((a) => a.of("dispatch").length === 1);
    await new Promise((r) => setTimeout(r, 300));
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
