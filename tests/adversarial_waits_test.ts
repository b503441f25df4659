/**
 * A read token's `wait_for_run` calls cannot freeze the server: batches are capped, open waits
 * are capped per token and per server (each call of a batch counts), a sweep wait from event 0
 * reads no history, step waits cost the store nothing per metric write, and a heartbeating
 * agent beside all of it stays ONLINE with its lease renewed. The stall numbers themselves are
 * measured by `deno task bench:waits` (README "Trust model").
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness, type Harness } from "./_harness.ts";
import { createGatewayHarness, FakeAgent } from "./_fake_agent.ts";
import type { Database } from "../server/db/mod.ts";
import { MAX_MCP_BATCH } from "../mcp/http.ts";
import { openWaits } from "../server/runs/wait_slots.ts";

/** A POST of `tools/call` messages (a batch when more than one) to an app's `/mcp`. */
function postCalls(
  fetchFn: (req: Request) => Promise<Response>,
  base: string,
  token: string,
  calls: { name: string; args: Record<string, unknown> }[],
  signal?: AbortSignal,
): Promise<Response> {
  const messages = calls.map((c, i) => ({
    jsonrpc: "2.0",
    id: i + 1,
    method: "tools/call",
    params: { name: c.name, arguments: c.args },
  }));
  return fetchFn(
    new Request(`${base}/mcp`, {
      method: "POST",
      signal,
      headers: {
        authorization: `Bearer ${token}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify(messages.length === 1 ? messages[0] : messages),
    }),
  );
}

const waits = (n: number, args: Record<string, unknown>) =>
  Array.from({ length: n }, () => ({ name: "wait_for_run", args }));

/** Every JSON-RPC answer of an SSE body. */
async function answers(res: Response) {
  const text = await res.text();
  // deno-lint-ignore no-explicit-any -- JSON-RPC answers
  const out: any[] = [];
  for (const m of text.matchAll(/^data: (.*)$/gm)) {
    const msg = JSON.parse(m[1]);
    out.push(...(Array.isArray(msg) ? msg : [msg]));
  }
  return out.filter((m) => "result" in m || "error" in m);
}

/** Counts the rows of the events table that statements return while `fn` runs. */
async function eventRowsRead(db: Database, fn: () => Promise<unknown>): Promise<number> {
  let rows = 0;
  const prepare = db.prepare.bind(db);
  db.prepare = (sql: string) => {
    const stmt = prepare(sql);
    if (!/\bFROM events\b/.test(sql)) return stmt;
    return new Proxy(stmt, {
      get(target, key) {
        const v = Reflect.get(target, key);
        if (key === "all") {
          return (...a: never[]) => {
            const r = (v as (...a: never[]) => unknown[]).apply(target, a);
            rows += r.length;
            return r;
          };
        }
        if (key === "get") {
          return (...a: never[]) => {
            const r = (v as (...a: never[]) => unknown).apply(target, a);
            if (r !== undefined) rows++;
            return r;
          };
        }
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
  };
  try {
    await fn();
  } finally {
    db.prepare = prepare;
  }
  return rows;
}

/** Writes `n` events straight into the store (one statement). */
function floodEvents(db: Database, n: number): void {
  db.sqlite.prepare(
    `INSERT INTO events (ts, type, severity, message, data)
     WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM s WHERE x < ?)
     SELECT '2026-01-01T00:00:00Z', 'CHECKPOINT_CREATED', 'info', 'old event ' || x, '{}' FROM s`,
  ).run(n - 1);
}

async function sdkRun(h: Harness): Promise<string> {
  return (await h.call("POST", "/api/sdk/runs", { body: { project: "p", name: "r" } })).json.id;
}

Deno.test("a batch of more than MAX_MCP_BATCH messages is refused before any call runs", async () => {
  const h = await createHarness();
  try {
    const run = await sdkRun(h);
    const res = await postCalls(
      h.app.fetch,
      "http://gpuctl.test",
      h.tokens.read,
      waits(MAX_MCP_BATCH + 1, { run_id: run, timeout_s: 1 }),
    );
    assertEquals(res.status, 413);
    const body = await res.json();
    assertEquals(body.error.code, "TooManyCalls");
    assertStringIncludes(body.error.message, `at most ${MAX_MCP_BATCH}`);
    assertEquals(openWaits(h.ctx), 0);
  } finally {
    await h.close();
  }
});

Deno.test("open waits are capped per token and per server; each call of a batch counts; the refusal names the cap", async () => {
  const h = await createHarness();
  h.ctx.waits = { maxWaitsPerToken: 4, maxWaits: 6 };
  const aborts: AbortController[] = [];
  const open = (token: string, n: number) => {
    const abort = new AbortController();
    aborts.push(abort);
    return postCalls(
      h.app.fetch,
      "http://gpuctl.test",
      token,
      waits(n, { run_id: run, timeout_s: 60 }),
      abort.signal,
    );
  };
  const run = await sdkRun(h);
  try {
    // A batch of 5 from one token passes the per-token cap of 4: all of it is refused.
    const five = await open(h.tokens.read, 5);
    assertEquals(five.status, 429);
    const refused = (await five.json()).error;
    assertEquals(refused.code, "TooManyWaits");
    assertStringIncludes(refused.message, "at most 4 per token");
    assertEquals(openWaits(h.ctx), 0, "a refused batch holds nothing");

    // Four waits of the read token are open; one more from it is refused.
    const four = await open(h.tokens.read, 4);
    assertEquals(four.status, 200);
    assertEquals(openWaits(h.ctx, await tokenId(h, h.tokens.read)), 4);
    const fifth = await open(h.tokens.read, 1);
    assertEquals(fifth.status, 429);
    assertStringIncludes((await fifth.json()).error.message, "at most 4 per token");

    // Another token takes the last two of the server's six; a third token gets none.
    const two = await open(h.tokens.write, 2);
    assertEquals(two.status, 200);
    const third = await open(h.tokens.admin, 1);
    assertEquals(third.status, 429);
    assertStringIncludes((await third.json()).error.message, "at most 6 (4 per token)");

    // Reads that are not waits still work while the caps are full.
    const read = await postCalls(h.app.fetch, "http://gpuctl.test", h.tokens.read, [
      { name: "get_run", args: { run_id: run } },
    ]);
    assertEquals(read.status, 200);
    assertEquals((await answers(read))[0].result.isError, undefined);

    // Cancelled waits give their slots back.
    for (const a of aborts) a.abort();
    await Promise.allSettled([four.body?.cancel(), two.body?.cancel()]);
    for (let i = 0; i < 100 && openWaits(h.ctx) > 0; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assertEquals(openWaits(h.ctx), 0);
  } finally {
    for (const a of aborts) a.abort();
    await h.close();
  }
});

async function tokenId(h: Harness, token: string): Promise<string> {
  const { authenticate } = await import("../server/auth/service.ts");
  return authenticate(h.ctx, token)!.token_id;
}

Deno.test("a sweep wait from event 0 over a long event log reads no history, and still finds its sweep's stored event", async () => {
  const h = await createHarness();
  try {
    const sweep = (await h.call("POST", "/api/sweeps", {
      body: {
        name: "s",
        metric: "loss",
        base: { name: "t", command: ["true"], working_dir: "/w", gpus: 8 },
        parameters: { lr: { values: [1, 2] } },
      },
    })).json;
    assert(sweep.id, JSON.stringify(sweep));
    floodEvents(h.ctx.db, 20_000);
    let got: unknown[] = [];
    const rows = await eventRowsRead(h.ctx.db, async () => {
      const res = await postCalls(
        h.app.fetch,
        "http://gpuctl.test",
        h.tokens.read,
        waits(MAX_MCP_BATCH, { sweep_id: sweep.id, after_event_id: 0, timeout_s: 1 }),
      );
      got = await answers(res);
    });
    assertEquals(got.length, MAX_MCP_BATCH);
    assert(rows <= MAX_MCP_BATCH * 4, `the waits read ${rows} event rows`);

    // A stored SWEEP_FINISHED after the flood is found by the same look.
    await h.call("POST", `/api/sweeps/${sweep.id}/cancel`, { body: {} });
    const res = await postCalls(h.app.fetch, "http://gpuctl.test", h.tokens.read, [
      { name: "wait_for_run", args: { sweep_id: sweep.id, after_event_id: 0, timeout_s: 5 } },
    ]);
    const [answer] = await answers(res);
    assertEquals(answer.result.structuredContent.reason, "finished");
    assertEquals(answer.result.structuredContent.sweep.status, "CANCELLED");
  } finally {
    await h.close();
  }
});

Deno.test("step waits cost the store nothing per metric write, and wake on the step from the write itself", async () => {
  const h = await createHarness();
  try {
    const run = await sdkRun(h);
    const pending = postCalls(
      h.app.fetch,
      "http://gpuctl.test",
      h.tokens.read,
      waits(MAX_MCP_BATCH, { run_id: run, until: "step>=50", timeout_s: 30 }),
    ).then(answers);
    // Every wait has made its first look and listens to the run's points.
    for (let i = 0; i < 500 && h.ctx.bus.listenerCount(`metrics:${run}`) < MAX_MCP_BATCH; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assertEquals(h.ctx.bus.listenerCount(`metrics:${run}`), MAX_MCP_BATCH);
    // Statements run for one metric write, with 32 step waits listening and with none.
    const statements = async (step: number) => {
      let n = 0;
      const prepare = h.ctx.db.prepare.bind(h.ctx.db);
      h.ctx.db.prepare = (sql: string) => (n++, prepare(sql));
      try {
        await h.call("POST", `/api/sdk/runs/${run}/log`, {
          body: { points: [{ key: "loss", step, value: 1 }] },
        });
        await new Promise((r) => setTimeout(r, 0));
      } finally {
        h.ctx.db.prepare = prepare;
      }
      return n;
    };
    const withWaits = await statements(1);
    assertEquals(openWaits(h.ctx), MAX_MCP_BATCH);
    const run2 = await sdkRun(h);
    const alone = await (async () => {
      let n = 0;
      const prepare = h.ctx.db.prepare.bind(h.ctx.db);
      h.ctx.db.prepare = (sql: string) => (n++, prepare(sql));
      try {
        await h.call("POST", `/api/sdk/runs/${run2}/log`, {
          body: { points: [{ key: "loss", step: 1, value: 1 }] },
        });
        await new Promise((r) => setTimeout(r, 0));
      } finally {
        h.ctx.db.prepare = prepare;
      }
      return n;
    })();
    assertEquals(withWaits, alone, "the waits ran statements of their own on a metric write");
    await statements(50);
    const got = await pending;
    assertEquals(got.length, MAX_MCP_BATCH);
    for (const a of got) assertEquals(a.result.structuredContent.reason, "step");
  } finally {
    await h.close();
  }
});

Deno.test("under the wait probes a heartbeating agent stays ONLINE and keeps its lease", async () => {
  const h = await createGatewayHarness({ nodeTimeoutMs: 3000, livenessIntervalMs: 50 });
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  let beat: ReturnType<typeof setInterval> | undefined;
  const abort = new AbortController();
  try {
    agent.hello();
    await agent.until((a) => a.of("ack").length === 2);
    beat = setInterval(() => agent.heartbeat(), 100);
    const run = await sdkRun(h);
    const sweep = (await h.call("POST", "/api/sweeps", {
      body: {
        name: "s",
        metric: "loss",
        base: { name: "t", command: ["true"], working_dir: "/w", gpus: 8 },
        parameters: { lr: { values: [1, 2] } },
      },
    })).json;
    floodEvents(h.ctx.db, 58_000);
    const leases = agent.of("lease").length;
    const fetchFn = (req: Request) => fetch(req);
    const probes = [
      // 1,000 waits on a run, in batches of the most a batch may hold.
      ...Array.from(
        { length: 32 },
        () =>
          postCalls(
            fetchFn,
            h.base,
            h.tokens.read,
            waits(MAX_MCP_BATCH, { run_id: run, until: "step>=1000000", timeout_s: 2 }),
            abort.signal,
          ),
      ),
      // Sweep waits from event 0.
      ...Array.from(
        { length: 4 },
        () =>
          postCalls(
            fetchFn,
            h.base,
            h.tokens.write,
            waits(25, { sweep_id: sweep.id, after_event_id: 0, timeout_s: 1 }),
            abort.signal,
          ),
      ),
    ].map((p) => p.then((r) => r.text().then(() => r.status)));
    // Metric writes while the step waits listen.
    for (let step = 0; step < 50; step++) {
      await h.call("POST", `/api/sdk/runs/${run}/log`, {
        body: { points: Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, step, value: 1 })) },
      });
    }
    const statuses = await Promise.all(probes);
    assert(statuses.includes(429), "past the caps the probes are refused");
    await agent.until((a) => a.of("lease").length > leases + 5);
    assertEquals((await h.call("GET", "/api/nodes/node-a")).json.status, "ONLINE");
    assertEquals((await h.call("GET", "/api/events?type=NODE_OFFLINE")).json.items, []);
    assertEquals((await h.call("GET", "/api/events?type=JOB_FENCED")).json.items, []);
  } finally {
    abort.abort();
    clearInterval(beat);
    await agent.close();
    await h.stop();
  }
});
