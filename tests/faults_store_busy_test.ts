/**
 * Fault: the store under contention. While points stream in (two writers over HTTP),
 * online backups run and a long metrics export pages through a growing
 * series: no client ever gets a 5xx or sees SQLITE_BUSY ("database is locked"), every
 * backup passes integrity_check, and the export reads every point once, in order.
 *
 * Short tier: 50,000 points before the export, 2 backups. GPUCTL_FAULTS=long: 1,000,000
 * points, 5 backups.
 */
import { assert, assertEquals } from "./assert.ts";
import { api, startServerProcess } from "./_processes.ts";

const LONG = Deno.env.get("GPUCTL_FAULTS") === "long";
const PRELOAD = LONG ? 1_000_000 : 50_000;
const BACKUPS = LONG ? 5 : 2;
const BATCH = 5_000;

Deno.test(`backups and a long metrics export during ingest: no 5xx, no SQLITE_BUSY reaches a client`, async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-faults-busy-" });
  const server = await startServerProcess(`${home}/server`);
  const call = api(server.url, server.adminToken);
  const failures: string[] = [];
  /** Every answer passes through here: a 5xx or a lock error is a failure. */
  const note = <T extends { status: number; text: string }>(what: string, res: T): T => {
    if (res.status >= 500 || /SQLITE_BUSY|database is locked/i.test(res.text)) {
      failures.push(`${what}: ${res.status} ${res.text.slice(0, 200)}`);
    }
    return res;
  };
  try {
    const run = note("create run", await call("POST", "/api/sdk/runs", { project: "busy" })).json
      .id;
    const batch = (key: string, from: number) => ({
      points: Array.from({ length: BATCH }, (_, i) => ({ key, step: from + i, value: i % 97 })),
    });
    for (let step = 0; step < PRELOAD; step += BATCH) {
      note("preload", await call("POST", `/api/sdk/runs/${run}/log`, batch("exported", step)));
    }
    let writing = true;
    let written = 0;
    const writer = async (key: string) => {
      for (let step = 0; writing; step += BATCH) {
        const res = note(
          "ingest",
          await call("POST", `/api/sdk/runs/${run}/log`, batch(key, step)),
        );
        if (res.status === 200) written += BATCH;
      }
    };
    const writers = [writer("live_a"), writer("live_b")];
    // The export, paging while ingest and backups run.
    const exporter = (async () => {
      let cursor: string | null = null;
      let count = 0;
      let last = -1;
      let pages = 0;
      do {
        const q: string = cursor === null ? "" : `&cursor=${cursor}`;
        const res = note(
          "export",
          await call("GET", `/api/runs/${run}/metrics/points?key=exported&limit=5000${q}`),
        );
        assertEquals(res.status, 200, res.text.slice(0, 300));
        for (const step of res.json.steps as number[]) {
          assert(step > last, `export went back from ${last} to ${step}`);
          last = step;
          count++;
        }
        cursor = res.json.next_cursor;
        pages++;
      } while (cursor !== null);
      return { count, pages };
    })();
    const backups: number[] = [];
    for (let i = 0; i < BACKUPS; i++) {
      const t0 = performance.now();
      const res = note("backup", await call("POST", "/api/admin/backup"));
      assertEquals(res.status, 201, res.text);
      assertEquals(res.json.integrity, "ok");
      backups.push(performance.now() - t0);
    }
    const exported = await exporter;
    writing = false;
    await Promise.all(writers);
    assertEquals(failures, []);
    assertEquals(exported.count, PRELOAD, "the export read every point once");
    assert(written > 0, "ingest went on meanwhile");
    assert(!/SQLITE_BUSY|database is locked/i.test(server.proc.output()), "a lock error logged");
    // deno-lint-ignore no-console -- what this scenario measured
    console.log(
      `store under contention: ${BACKUPS} backups (${
        backups.map((ms) => (ms / 1000).toFixed(1)).join(", ")
      } s), export of ${exported.count} points in ${exported.pages} pages, ${written} points ingested meanwhile; 0 errors`,
    );
  } finally {
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
});
