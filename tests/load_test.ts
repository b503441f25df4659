/**
 * The short load tier: 20 simulated agents × 100 points/s and 200 log lines/s in all,
 * 20 SSE readers and 20 SSE clients that never read, for 15 s against the real server.
 * Asserted: nothing lost or stored twice (each agent's ledger equals the store), every
 * reader got every point of its run, no node seen OFFLINE, and generous bounds on p99
 * ingest-to-commit (5 s) and server RSS (1 GiB); the measured numbers are printed (the
 * targets, p99 < 500 ms, are for `deno task bench:load`, not for a timed test on a shared
 * machine).
 */
import { assert, assertEquals } from "./assert.ts";
import { startLoad } from "./_load.ts";

Deno.test("load: 20 simulated agents × 100 points/s with logs, 20 SSE readers and 20 that never read: nothing lost", async () => {
  const load = await startLoad({
    agents: 20,
    pointsPerAgent: 100,
    linesPerS: 200,
    sseReaders: 20,
    silentSse: 20,
    heartbeatS: 2,
    nodeTimeoutS: 20,
  });
  try {
    const r = await load.phase(15, 100);
    const v = await load.verify();
    // The readers get the last points shortly after their acks: wait for them, bounded.
    for (let i = 0; i < 150 && load.stats().sse.some((x) => x.received < x.sent); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const s = load.stats();
    // deno-lint-ignore no-console -- the numbers this tier measures
    console.log(
      `load: ${r.agents} agents, ${r.sentPointsPerS.toFixed(0)} points/s and ${
        r.sentLinesPerS.toFixed(0)
      } lines/s sent for ${r.seconds.toFixed(0)} s; ingest-to-commit p50 ${
        r.ingestP50Ms.toFixed(0)
      } ms, p99 ${r.ingestP99Ms.toFixed(0)} ms; SSE p99 ${
        r.sseP99Ms.toFixed(0)
      } ms; server RSS max ${s.rssMaxMb.toFixed(0)} MB, WAL max ${
        s.walMaxMb.toFixed(1)
      } MB; ${v.points} points, ${v.lines} lines stored once`,
    );
    assertEquals(v.lost, []);
    assertEquals(v.unacked, 0);
    assertEquals(s.sse.filter((x) => x.received !== x.sent), [], "an SSE reader missed points");
    assertEquals(s.falseOffline, 0, "a connected node was seen OFFLINE");
    assert(r.sentPointsPerS > 0.5 * 2000, `the load ran at ${r.sentPointsPerS} points/s`);
    assert(r.ingestP99Ms < 5000, `p99 ${r.ingestP99Ms} ms`);
    assert(s.rssMaxMb < 1024, `server RSS ${s.rssMaxMb} MB`);
  } finally {
    await load.stop();
  }
});
