// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * `deno task bench:large`: the server's memory with a large store, 100 runs × 10 keys ×
 * 100,000 points (100 million points, about 8 GB on disk), and the query times on it.
 * The points are written straight into the database file while the server is stopped
 * (through the API this would take the better part of an hour) and sealed into blocks as
 * the server's background sealer would have done, then the server is started on it and
 * used the way a console would: list, compare, and chart every run.
 *
 * `--points N` changes the points per series (for a quicker, smaller run).
 */
import { DatabaseSync } from "node:sqlite";
import { api, startServerProcess } from "../tests/_processes.ts";
import { metricBlocks, openDatabase } from "../server/db/mod.ts";

const KEYS = [
  "train/loss",
  "eval/loss",
  "eval/accuracy",
  "lr",
  "grad_norm",
  "sys/gpu0/util",
  "sys/gpu0/mem_used_mb",
  "sys/gpu0/temp_c",
  "sys/gpu0/power_w",
  "sys/cpu_pct",
];
const RUNS = 100;
const flag = Deno.args.indexOf("--points");
const POINTS = flag >= 0 ? Number(Deno.args[flag + 1]) : 100_000;
if (!Number.isInteger(POINTS) || POINTS < 10) throw new Error("--points: a whole number ≥ 10");

function memory(pid: number): { rss: number; peak: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)![1]);
  return { rss: kb("VmRSS") / 1024, peak: kb("VmHWM") / 1024 };
}

const mb = (n: number) => `${n.toFixed(0)} MB`;
const home = await Deno.makeTempDir({ prefix: "gpuctl-bench-large-" });
try {
  // 1. Runs registered through the API, as the SDK does; all but five finished.
  let server = await startServerProcess(home);
  let call = api(server.url, server.adminToken);
  const runs: string[] = [];
  for (let i = 0; i < RUNS; i++) {
    const run = await call("POST", "/api/sdk/runs", {
      project: "large",
      experiment: `sweep-${i % 5}`,
      name: `run-${i}`,
      config: { lr: 10 ** -(2 + (i % 4)), batch_size: 32 << (i % 3), seed: i },
      max_steps: POINTS,
    });
    runs.push(run.json.id);
    if (i >= 5) await call("POST", `/api/sdk/runs/${run.json.id}/log`, { status: "SUCCEEDED" });
  }
  await server.proc.kill("SIGTERM");

  // 2. Points written straight into the file, with the per-key summaries the server keeps.
  const t0 = performance.now();
  const db = new DatabaseSync(`${home}/gpuctl.db`);
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF");
  const insert = db.prepare(
    `INSERT INTO metric_points (run_id, key, step, value, wall_time, seq)
     WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM s WHERE x < ?)
     SELECT ?, ?, x, ? / (1 + x * 0.001) + (x % 7) * 0.01, 1.7e9 + x * 0.1, ? + x FROM s`,
  );
  let seq = 0;
  for (const [r, run] of runs.entries()) {
    db.exec("BEGIN");
    for (const key of KEYS) {
      insert.run(POINTS - 1, run, key, 1 + r / RUNS, seq + 1);
      seq += POINTS;
    }
    db.exec("COMMIT");
  }
  db.exec(`
    UPDATE sequences SET value = ${seq} WHERE name = 'metric_points';
    INSERT INTO metric_keys (run_id, key, points, first_step, last_step, last_value,
      last_wall_time, min_value, min_step, max_value, max_step)
    SELECT g.run_id, g.key, g.n, g.first_step, g.last_step,
      (SELECT value FROM metric_points p WHERE p.run_id = g.run_id AND p.key = g.key
         AND p.step = g.last_step),
      (SELECT wall_time FROM metric_points p WHERE p.run_id = g.run_id AND p.key = g.key
         AND p.step = g.last_step),
      g.min_value,
      (SELECT step FROM metric_points p WHERE p.run_id = g.run_id AND p.key = g.key
         AND p.value = g.min_value ORDER BY step LIMIT 1),
      g.max_value,
      (SELECT step FROM metric_points p WHERE p.run_id = g.run_id AND p.key = g.key
         AND p.value = g.max_value ORDER BY step LIMIT 1)
    FROM (SELECT run_id, key, COUNT(*) AS n, MIN(step) AS first_step, MAX(step) AS last_step,
            MIN(value) AS min_value, MAX(value) AS max_value
          FROM metric_points GROUP BY run_id, key) AS g;
    PRAGMA wal_checkpoint(TRUNCATE);
  `);
  db.close();
  const written = performance.now();
  // Sealed into blocks, as the server's background sealer does while series grow.
  const store = openDatabase(`${home}/gpuctl.db`);
  store.sqlite.exec("PRAGMA synchronous = OFF");
  for (const run of runs) {
    for (const key of KEYS) {
      metricBlocks.sealNext(store, run, key, Math.ceil(POINTS / metricBlocks.BLOCK_POINTS));
    }
  }
  store.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  store.close();
  const size = Deno.statSync(`${home}/gpuctl.db`).size;
  console.log(
    `store: ${RUNS} runs × ${KEYS.length} keys × ${POINTS} points written in ${
      ((written - t0) / 1000).toFixed(0)
    } s, sealed into blocks in ${((performance.now() - written) / 1000).toFixed(0)} s, ${
      (size / 1e9).toFixed(1)
    } GB`,
  );

  // 3. The server on that store: idle, then used as the console would use it.
  server = await startServerProcess(home);
  call = api(server.url, server.adminToken);
  const pid = server.proc.child.pid;
  await new Promise((r) => setTimeout(r, 3000));
  const idle = memory(pid);
  const timed = async (path: string, body?: unknown) => {
    const t = performance.now();
    const res = await call(body === undefined ? "GET" : "POST", path, body);
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.text.slice(0, 300)}`);
    return performance.now() - t;
  };
  const list = await timed("/api/runs?project=large");
  const compare = await timed(`/api/runs/compare?runs=${runs.slice(0, 20).join(",")}`);
  const query20 = { runs: runs.slice(0, 20), keys: ["train/loss"], max_points: 2000 };
  const cold20 = await timed("/api/runs/metrics:query", query20);
  const warm20 = await timed("/api/runs/metrics:query", query20);
  // Every series of every run charted once: a chart is one key of up to 20 runs.
  const t1 = performance.now();
  for (let i = 0; i < RUNS; i += 20) {
    for (const key of KEYS) {
      await timed("/api/runs/metrics:query", {
        runs: runs.slice(i, i + 20),
        keys: [key],
        max_points: 2000,
      });
    }
  }
  const all = performance.now() - t1;
  const used = memory(pid);
  await server.proc.kill("SIGTERM");

  const rows = [
    ["server RSS idle on the store", mb(idle.rss), "≤ 150 MB"],
    [
      "server RSS after charting every series (peak)",
      `${mb(used.rss)} (peak ${mb(used.peak)})`,
      "≤ 400 MB",
    ],
    ["GET /api/runs (first page)", `${list.toFixed(0)} ms`, "-"],
    ["GET /api/runs/compare (20 runs)", `${compare.toFixed(0)} ms`, "-"],
    [
      `metrics:query 20 runs × ${POINTS} points → 2000`,
      `${cold20.toFixed(0)} ms cold, ${warm20.toFixed(0)} ms warm`,
      "≤ 300 ms",
    ],
    [
      `every series (${RUNS * KEYS.length}) charted once, 20 runs × 1 key a query`,
      `${(all / 1000).toFixed(1)} s`,
      "-",
    ],
  ];
  console.log("\n| measure | value | target |\n| --- | --- | --- |");
  for (const row of rows) console.log(`| ${row.join(" | ")} |`);
} finally {
  await Deno.remove(home, { recursive: true });
}
