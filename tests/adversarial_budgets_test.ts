/**
 * Amplification budgets: one small request may not become a huge write, and agent
 * connections (each of which Deno lets buffer a 64 MiB message) are capped before the upgrade.
 */
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness } from "./_harness.ts";
import { createGatewayHarness, FakeAgent, FakeClock } from "./_fake_agent.ts";
import { MAX_SWEEP_BYTES } from "../server/sweeps/service.ts";
import { MAX_METRIC_KEYS_PER_RUN } from "../server/runs/service.ts";
import { NODE_EVENT_BURST } from "../server/gateway/apply_frame.ts";

Deno.test("a sweep whose trials × base size passes the budget is refused, naming the field and the numbers, and stores nothing", async () => {
  const h = await createHarness();
  try {
    const env = Object.fromEntries(
      Array.from({ length: 4 }, (_, i) => [`BIG_${i}`, "x".repeat(50_000)]),
    );
    const res = await h.call("POST", "/api/sweeps", {
      token: h.tokens.write,
      body: {
        name: "amplified",
        metric: "loss",
        base: { name: "t", command: ["true"], working_dir: "/w", gpus: 1, env },
        parameters: { seed: { distribution: "int", min: 0, max: 1_000_000 } },
        method: "random",
        runs: 1000,
      },
    });
    assertEquals(res.status, 400, res.text.slice(0, 300));
    assertEquals(res.json.error.details[0].field, "base");
    const problem = res.json.error.details[0].problem;
    assertStringIncludes(problem, "1000 trials");
    assertStringIncludes(problem, `${MAX_SWEEP_BYTES}`);
    assertEquals((await h.call("GET", "/api/sweeps")).json.items, []);
    assertEquals((await h.call("GET", "/api/jobs")).json.items, []);

    // The same base for a few trials fits.
    const small = await h.call("POST", "/api/sweeps", {
      token: h.tokens.write,
      body: {
        name: "fits",
        metric: "loss",
        base: { name: "t", command: ["true"], working_dir: "/w", gpus: 1, env },
        parameters: { lr: { values: [1, 2] } },
      },
    });
    assertEquals(small.status, 201, small.text.slice(0, 300));
  } finally {
    await h.close();
  }
});

Deno.test("agent connections past the server's cap are refused before the upgrade, naming the cap", async () => {
  const h = await createGatewayHarness({ maxConnections: 2 });
  const agents: FakeAgent[] = [];
  try {
    for (let i = 0; i < 2; i++) agents.push(await FakeAgent.connect(h.base, h.tokens.agent));
    const res = await h.app.fetch(
      new Request("http://gpuctl.test/api/agent/ws", {
        headers: {
          authorization: `Bearer ${h.tokens.agent}`,
          upgrade: "websocket",
          connection: "Upgrade",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          "sec-websocket-version": "13",
        },
      }),
    );
    assertEquals(res.status, 429);
    const body = await res.json();
    assertEquals(body.error.code, "TooManyAgentConnections");
    assertStringIncludes(body.error.message, "at most 2 (max_agent_connections");
    // One that closes frees its place.
    await agents.pop()!.close();
    agents.push(await FakeAgent.connect(h.base, h.tokens.agent));
    agents[agents.length - 1].hello();
    await agents[agents.length - 1].until((a) => a.of("ack").length === 2);
  } finally {
    for (const a of agents) await a.close();
    await h.stop();
  }
});

Deno.test("a run's metric keys are capped: points of new keys past the budget are not stored, and the run says so", async () => {
  const h = await createHarness();
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json.id;
    const log = (points: { key: string; step: number; value: number }[]) =>
      h.call("POST", `/api/sdk/runs/${run}/log`, { body: { points } });
    for (let start = 0; start < MAX_METRIC_KEYS_PER_RUN + 50; start += 5000) {
      const n = Math.min(5000, MAX_METRIC_KEYS_PER_RUN + 50 - start);
      const res = await log(
        Array.from({ length: n }, (_, i) => ({ key: `k/${start + i}`, step: 0, value: 1 })),
      );
      assertEquals(res.status < 300, true, res.text.slice(0, 200));
    }
    const keys = h.ctx.db.prepare("SELECT COUNT(*) AS n FROM metric_keys WHERE run_id = ?")
      .get(run) as { n: number };
    assertEquals(keys.n, MAX_METRIC_KEYS_PER_RUN);
    const dropped = (await h.call("GET", `/api/events?type=POINTS_DROPPED&run_id=${run}`)).json
      .items;
    assertEquals(dropped.length, 1);
    assertEquals(dropped[0].data.dropped, 50);
    assertStringIncludes(dropped[0].message, `${MAX_METRIC_KEYS_PER_RUN} metric keys`);
    // A key it has still takes points.
    await log([{ key: "k/0", step: 1, value: 2 }]);
    const points = h.ctx.db.prepare(
      "SELECT COUNT(*) AS n FROM metric_points WHERE run_id = ? AND key = 'k/0'",
    ).get(run) as { n: number };
    assertEquals(points.n, 2);
  } finally {
    await h.close();
  }
});

Deno.test("a node's events past its budget are acknowledged and not stored", async () => {
  const clock = new FakeClock();
  const h = await createGatewayHarness({}, clock);
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  try {
    agent.hello();
    await agent.until((a) => a.of("ack").length === 2);
    const n = NODE_EVENT_BURST + 100;
    let last = 0;
    for (let i = 0; i < n; i++) {
      last = agent.data(
        { type: "event", event: { type: "DISK_LOW", severity: "warning", message: `e${i}` } },
        "sys",
      );
    }
    await agent.until((a) => a.of("ack").some((f) => f.stream === "sys" && f.seq === last));
    const stored = (await h.call("GET", "/api/events?type=DISK_LOW&limit=1000")).json.items;
    assertEquals(stored.length, NODE_EVENT_BURST);
    // The budget refills with time.
    clock.ms += 1000;
    last = agent.data(
      { type: "event", event: { type: "DISK_LOW", severity: "warning", message: "later" } },
      "sys",
    );
    await agent.until((a) => a.of("ack").some((f) => f.stream === "sys" && f.seq === last));
    const after = (await h.call("GET", "/api/events?type=DISK_LOW&limit=1000")).json.items;
    assertEquals(after.length, NODE_EVENT_BURST + 1);
  } finally {
    await agent.close();
    await h.stop();
  }
});
