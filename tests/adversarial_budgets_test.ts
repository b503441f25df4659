/**
 * Amplification budgets: one small request may not become a huge write, and agent
 * connections (each of which Deno lets buffer a 64 MiB message) are capped before the upgrade.
 */
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness } from "./_harness.ts";
import { createGatewayHarness, FakeAgent } from "./_fake_agent.ts";
import { MAX_SWEEP_BYTES } from "../server/sweeps/service.ts";

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
