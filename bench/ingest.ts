// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * The bench's ingest row: 500,000 points of one run in batches of 5,000 through the service
 * layer (`ingestBatch`), next to the same rows put into the same table shape with plain
 * batched `node:sqlite` inserts in the same process. `deno task bench` runs it with the other
 * rows; `deno run -A bench/ingest.ts` runs it alone (`--repeat N` measures it N times).
 */
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { createContext } from "../server/context.ts";
import { openDatabase } from "../server/db/mod.ts";
import { ingestBatch, registerSdkRun } from "../server/runs/service.ts";
import { BenchReport, type Report } from "./report.ts";

const BATCH = 5000;
const BATCHES = 100;
const KEYS = 10;

function batchPoints(b: number) {
  return Array.from({ length: BATCH }, (_, i) => ({
    key: `train/k${i % KEYS}`,
    step: b * (BATCH / KEYS) + Math.floor(i / KEYS),
    value: Math.random(),
    wall_time: 1_700_000_000 + b,
  }));
}

function time(fn: () => void): number {
  const t = performance.now();
  fn();
  return performance.now() - t;
}

/**
 * Measures the ingest row in `dir` (a fresh folder) and reports it. The two take turns batch by
 * batch, each batch timed on its own, so that other work on a shared machine slows both alike
 * and their ratio holds still better than their rates.
 */
export function benchIngest(dir: string, report: Report): void {
  // Baseline: the same rows (the run's own id) into the same table shape with plain batched
  // node:sqlite inserts.
  const raw = new DatabaseSync(`${dir}/raw.db`);
  raw.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
  raw.exec(
    "CREATE TABLE p (run_id TEXT, key TEXT, step INTEGER, value REAL, wall_time REAL, seq INTEGER, PRIMARY KEY (run_id, key, step)) WITHOUT ROWID",
  );
  const ins = raw.prepare("INSERT INTO p VALUES (?, ?, ?, ?, ?, ?)");
  let seq = 0;
  const ctx = createContext({ db: openDatabase(`${dir}/ingest.db`), backupDir: `${dir}/backups` });
  const run = registerSdkRun(ctx, { project: "bench" }).run;
  let rawMs = 0;
  let ms = 0;
  for (let b = 0; b < BATCHES; b++) {
    rawMs += time(() => {
      const pts = batchPoints(b);
      raw.exec("BEGIN");
      for (const p of pts) ins.run(run.id, p.key, p.step, p.value, p.wall_time, ++seq);
      raw.exec("COMMIT");
    });
    ms += time(() => ingestBatch(ctx, run.id, { points: batchPoints(b) }));
  }
  raw.close();
  ctx.db.close();
  const total = BATCH * BATCHES;
  const rate = total / (ms / 1000);
  const rawRate = total / (rawMs / 1000);
  report({
    name: "ingest (service layer, batches of 5000)",
    value: { value: rate, unit: "points/s" },
    baseline: {
      value: rawRate,
      unit: "points/s",
      text: `raw batched inserts ${Math.round(rawRate).toLocaleString("en")} points/s (ours ${
        Math.round((rate / rawRate) * 100)
      } %)`,
    },
    target: { op: ">=", value: 200_000, also: { op: ">=", ratio: 0.8 } },
  });
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { repeat: { type: "string", default: "1" } } });
  const report = new BenchReport();
  for (let i = 0; i < Number(values.repeat); i++) {
    const dir = await Deno.makeTempDir({ prefix: "gpuctl-bench-ingest-" });
    benchIngest(dir, report.add);
    await Deno.remove(dir, { recursive: true });
  }
  console.log(`load average ${Deno.loadavg().map((n) => n.toFixed(2)).join(" ")}`);
}
