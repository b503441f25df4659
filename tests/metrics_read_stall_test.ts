/**
 * A read token cannot stall the server: a query over a series of millions of points runs
 * beside a heartbeating agent, and neither the event loop nor the node's liveness notices.
 */
import { assert, assertEquals } from "./assert.ts";
import { createGatewayHarness, FakeAgent } from "./_fake_agent.ts";
import type { Database } from "../server/db/mod.ts";

const POINTS = 1_000_000;

/** Writes `n` points of one key straight into the store, with its summary, in a second or two. */
function writeLargeSeries(db: Database, runId: string, key: string, n: number): void {
  const sqlite = db.sqlite;
  const seq = (sqlite.prepare("SELECT value FROM sequences WHERE name = 'metric_points'").get() as {
    value: number;
  }).value;
  sqlite.exec("BEGIN");
  sqlite.prepare(
    `INSERT INTO metric_points (run_id, key, step, value, wall_time, seq)
     WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM s WHERE x < ?)
     SELECT ?, ?, x, 1.0 / (1 + x * 0.001), 1.7e9 + x * 0.1, ? + x FROM s`,
  ).run(n - 1, runId, key, seq + 1);
  sqlite.prepare("UPDATE sequences SET value = ? WHERE name = 'metric_points'").run(seq + n);
  sqlite.prepare(
    `INSERT INTO metric_keys (run_id, key, points, first_step, last_step, last_value,
       last_wall_time, min_value, min_step, max_value, max_step)
     VALUES (?, ?, ?, 0, ?, ?, ?, ?, ?, 1, 0)`,
  ).run(
    runId,
    key,
    n,
    n - 1,
    1 / (1 + (n - 1) * 0.001),
    1.7e9 + (n - 1) * 0.1,
    1 / (1 + (n - 1) * 0.001),
    n - 1,
  );
  sqlite.exec("COMMIT");
}

/** Records the longest time between ticks of a 10 ms timer: how long the loop was held. */
function loopGapMeter() {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 10);
  return {
    stop(): number {
      clearInterval(timer);
      return Math.max(worst, performance.now() - last);
    },
  };
}

Deno.test("a query over a million-point series with duplicate keys never holds the loop for a second, and a heartbeating node stays ONLINE", async () => {
  const h = await createGatewayHarness({ nodeTimeoutMs: 1500, livenessIntervalMs: 50 });
  const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "big" } })).json;
  writeLargeSeries(h.ctx.db, run.id, "loss", POINTS);
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  let beat: ReturnType<typeof setInterval> | undefined;
  try {
    agent.hello();
    await agent.until((a) => a.of("ack").length === 2);
    beat = setInterval(() => agent.heartbeat(), 100);

    const meter = loopGapMeter();
    // Duplicates once multiplied the work; no max_points once meant every point.
    const q = await h.call("POST", "/api/runs/metrics:query", {
      token: h.tokens.read,
      body: { runs: [run.id, run.id], keys: ["loss", "loss", "loss", "loss"] },
    });
    const gapMs = meter.stop();
    assert(gapMs < 1000, `the event loop was held for ${gapMs.toFixed(0)} ms`);
    const node = (await h.call("GET", "/api/nodes/node-a")).json;
    assertEquals(node.status, "ONLINE");
    const offline = (await h.call("GET", "/api/events?type=NODE_OFFLINE")).json.items;
    assertEquals(offline, []);
    assertEquals(q.status, 200, q.text.slice(0, 300));
    assertEquals(q.json.series.length, 1, "duplicates are removed");
    const s = q.json.series[0];
    assertEquals([s.total_points, s.downsampled, s.steps.length], [POINTS, true, 2000]);
    assertEquals([s.steps[0], s.steps[1999]], [0, POINTS - 1]);
  } finally {
    clearInterval(beat);
    await agent.close();
    await h.stop();
  }
});
