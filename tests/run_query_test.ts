/**
 * `query_runs`: config and metric conditions, status, mark, parent and time, the order and the
 * limit, on REST, MCP (in-memory transport) and `gpuctl run list --where`; bad filters are a 400
 * naming the field.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness, type Harness } from "./_harness.ts";
import { memoryClient } from "../mcp/_test_client.ts";
import { runInProcess } from "../cli/_test_server.ts";
import { configValue, meets } from "../server/runs/query.ts";

// deno-lint-ignore no-explicit-any -- tests read arbitrary JSON answers
type Any = any;

/** Four SDK runs of one experiment with an lr, a depth and an eval/loss curve; one marked. */
async function seed(h: Harness) {
  const ids: Record<string, string> = {};
  const runs: [string, number, number, number[], string][] = [
    ["a", 0.1, 6, [0.9, 0.5, 0.6], "SUCCEEDED"],
    ["b", 0.01, 12, [0.8, 0.3, 0.35], "SUCCEEDED"],
    ["c", 0.001, 12, [0.7, 0.4], "FAILED"],
    ["d", 0.01, 6, [0.95], "SUCCEEDED"],
  ];
  for (const [name, lr, depth, loss, status] of runs) {
    const r = await h.call("POST", "/api/sdk/runs", {
      body: { project: "q", experiment: "e", name, config: { lr, model: { depth } } },
    });
    ids[name] = r.json.id;
    await h.call("POST", `/api/sdk/runs/${ids[name]}/log`, {
      body: { points: loss.map((value, step) => ({ key: "eval/loss", step, value })), status },
    });
  }
  await h.call("POST", `/api/runs/${ids.b}/mark`, { body: { mark: "kept", reason: "best" } });
  return ids;
}

Deno.test("meets() and configValue(): equal, comparisons, in, nested keys; a missing value never matches", () => {
  const config = { lr: 0.01, "a.b": 1, model: { depth: 12, act: "gelu" } };
  assertEquals(configValue(config, "model.depth"), 12);
  assertEquals(configValue(config, "a.b"), 1);
  assertEquals(configValue(config, "model.none"), undefined);
  assert(meets(0.01, 0.01) && !meets(0.01, 0.1));
  assert(meets(0.01, { lt: 0.1, gte: 0.01 }) && !meets(0.01, { gt: 0.01 }));
  assert(meets("gelu", { in: ["relu", "gelu"] }) && !meets("tanh", { in: ["gelu"] }));
  assert(meets(5, { ne: 6 }) && !meets(undefined, { ne: 6 }));
  assert(!meets("0.5", { lt: 1 }), "a string is not compared as a number");
});

Deno.test("query_runs on REST: config and metric conditions, status, mark, order and limit", async () => {
  const h = await createHarness();
  try {
    const ids = await seed(h);
    const q = async (body: unknown) => {
      const res = await h.call("POST", "/api/runs:query", { body, token: h.tokens.read });
      assertEquals(res.status, 200, res.text);
      return res.json;
    };
    const names = (r: Any) => r.items.map((x: Any) => x.name);
    assertEquals(names(await q({ where: { config: { lr: 0.01 } } })), ["d", "b"]);
    assertEquals(names(await q({ where: { config: { "model.depth": 12, lr: { lt: 0.01 } } } })), [
      "c",
    ]);
    const best = await q({
      where: { status: "SUCCEEDED", metrics: { "eval/loss": { best: { lt: 0.6 } } } },
      order_by: "metric.eval/loss.best",
    });
    assertEquals(names(best), ["b", "a"]);
    assertEquals([best.matched, best.scanned, best.truncated], [2, 3, false]);
    assertEquals(
      names(
        await q({
          where: { metrics: { "eval/loss": { latest: { gte: 0.6 } } } },
          order_by: "-metric.eval/loss.latest",
        }),
      ),
      ["d", "a"],
    );
    assertEquals(names(await q({ where: { mark: "kept" } })), ["b"]);
    assertEquals((await q({ where: { mark: "none" } })).matched, 3);
    assertEquals(names(await q({ order_by: "config.lr", limit: 2 })), ["c", "d"]);
    assertEquals(names(await q({ where: { status: ["FAILED"], parent_run: null } })), ["c"]);
    assertEquals((await q({ where: { created_after: "2999-01-01T00:00:00Z" } })).items, []);
    assertEquals((await q({ where: { project: "other" } })).matched, 0);
    assert(ids.a);

    for (
      const [body, field] of [
        [{ where: { config: { lr: { lt: "x" } } } }, "where.config.lr"],
        [{ order_by: "loss" }, "order_by"],
        [{ where: { mark: "great" } }, "where.mark"],
        [{ where: { created_after: "yesterday" } }, "where.created_after"],
        [{ limit: 0 }, "limit"],
        [{ where: { sql: "1=1" } }, "where"],
      ] as const
    ) {
      const res = await h.call("POST", "/api/runs:query", { body });
      assertEquals(res.status, 400, JSON.stringify(body));
      assertStringIncludes(res.json.error.message, field);
    }
  } finally {
    await h.close();
  }
});

Deno.test("query_runs on MCP and gpuctl run list --where answer what REST answers", async () => {
  const h = await createHarness();
  try {
    await seed(h);
    const body = {
      where: { metrics: { "eval/loss": { best: { lt: 0.45 } } } },
      order_by: "metric.eval/loss.best",
    };
    const rest = (await h.call("POST", "/api/runs:query", { body })).json;
    await using mcp = await memoryClient(h.ctx, h.tokens.read);
    const res: Any = await mcp.callTool({ name: "query_runs", arguments: body });
    assertEquals(res.structuredContent, rest);
    assertStringIncludes(res.content[0].text, "2 of 4 runs match");
    const env = {
      GPUCTL_SERVER_URL: "http://gpuctl.test",
      GPUCTL_TOKEN: h.tokens.read,
      NO_COLOR: "1",
    };
    const cli = (argv: string[]) =>
      runInProcess(argv, env, { fetch: (r, i) => h.app.fetch(new Request(r, i)) });
    const out = await cli([
      "run",
      "list",
      "--where",
      JSON.stringify(body.where),
      "--order-by",
      body.order_by,
      "--json",
    ]);
    assertEquals(out.code, 0, out.stderr);
    assertEquals(JSON.parse(out.stdout).items, rest.items);
    const table = await cli(["run", "list", "--where", '{"mark": "kept"}']);
    assertEquals(table.code, 0, table.stderr);
    assertStringIncludes(table.stdout, "eval/loss 0.3");
    const bad = await cli(["run", "list", "--where", "{nope"]);
    assertEquals(bad.code, 2);
    assertStringIncludes(bad.stderr, "--where is not JSON");
  } finally {
    await h.close();
  }
});
