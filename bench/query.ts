/**
 * The `metrics:query` rows of `deno task bench` (`deno task bench:query` runs them alone): a
 * 1,000,000-point series and 20 runs × 100,000 points, each downsampled to 2,000, read the
 * very first time (rows), right after a restart (an empty series cache) and warm.
 */
import { type Context, createContext } from "../server/context.ts";
import { openDatabase } from "../server/db/mod.ts";
import { ingestBatch, registerSdkRun } from "../server/runs/service.ts";
import { queryMetrics } from "../server/metrics/service.ts";
import { lttb } from "../server/metrics/lttb.ts";
import { BlockSealer } from "../server/metrics/block_sealer.ts";
import type { Report } from "./report.ts";

function time<T>(fn: () => T): [T, number] {
  const t = performance.now();
  const r = fn();
  return [r, performance.now() - t];
}

async function timeAsync<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = performance.now();
  const r = await fn();
  return [r, performance.now() - t];
}

async function repeat(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await timeAsync(fn))[1]);
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/**
 * Measures the `metrics:query` rows in a store under `dir`. With `restarts`, also that many
 * more restarts, each timed on the store as sealed and, in turn, on a copy without block
 * summaries (as a store sealed by a version before them reads until they are written).
 */
export async function benchQuery(
  report: Report,
  dir: string,
  options: { restarts?: number } = {},
): Promise<void> {
  const context = (path: string): Context =>
    createContext({ db: openDatabase(path), backupDir: `${dir}/backups` });
  const ctx = context(`${dir}/query.db`);
  const big = registerSdkRun(ctx, { project: "bench", name: "big" }).run;
  for (let b = 0; b < 100; b++) {
    ingestBatch(ctx, big.id, {
      points: Array.from({ length: 10_000 }, (_, i) => ({
        key: "loss",
        step: b * 10_000 + i,
        value: Math.exp(-(b * 10_000 + i) / 300_000) + Math.random() * 0.01,
        wall_time: 1_700_000_000 + b,
      })),
    });
  }
  const runs: string[] = [];
  for (let r = 0; r < 20; r++) {
    const run = registerSdkRun(ctx, { project: "bench", name: `r${r}` }).run;
    runs.push(run.id);
    for (let b = 0; b < 10; b++) {
      ingestBatch(ctx, run.id, {
        points: Array.from({ length: 10_000 }, (_, i) => ({
          key: "loss",
          step: b * 10_000 + i,
          value: Math.random(),
          wall_time: 1_700_000_000,
        })),
      });
    }
  }
  // Three readings of each query: the very first (rows out of SQLite, before the background
  // sealer ran), the first after a restart (from block summaries, an empty cache), then warm.
  const queryBig = (c: Context) =>
    queryMetrics(c, { runs: [big.id], keys: ["loss"], max_points: 2000 });
  const firstBig = (await timeAsync(() => queryBig(ctx)))[1];
  const queryMany = (c: Context) => queryMetrics(c, { runs, keys: ["loss"], max_points: 2000 });
  const firstMany = (await timeAsync(() => queryMany(ctx)))[1];
  const sealer = new BlockSealer(ctx);
  while (sealer.runOnce() > 0) { /* what the server does in the background as series grow */ }
  const restarted = context(`${dir}/query.db`);
  const afterRestartBig = (await timeAsync(() => queryBig(restarted)))[1];
  const one = await repeat(5, () => queryBig(restarted));
  const xs = Float64Array.from({ length: 1_000_000 }, (_, i) => i);
  const ys = Float64Array.from({ length: 1_000_000 }, (_, i) => Math.sin(i / 1000));
  const lttbOnly = Array.from({ length: 5 }, () => time(() => lttb(xs, ys, 2000))[1]);
  const ms = (value: number, text?: string) => ({ value, unit: "ms", text });
  report({
    name: "metrics:query 1,000,000 points → 2,000 (LTTB), warm",
    value: ms(median(one), `${median(one).toFixed(0)} ms median of 5`),
    baseline: ms(
      median(lttbOnly),
      `LTTB alone on the same size ${median(lttbOnly).toFixed(0)} ms`,
    ),
    target: { op: "<=", value: 50 },
  });
  report({
    name: "metrics:query 1,000,000 points → 2,000, right after a restart (block summaries)",
    value: ms(afterRestartBig),
    baseline: ms(median(lttbOnly), `LTTB alone ${median(lttbOnly).toFixed(0)} ms`),
    target: { op: "<=", value: 50 },
  });
  const afterRestartMany = (await timeAsync(() => queryMany(restarted)))[1];
  const many = await repeat(5, () => queryMany(restarted));
  const rawRead = Array.from({ length: 3 }, () =>
    time(() => {
      for (const id of runs) {
        ctx.db.sqlite.prepare(
          "SELECT step, value, wall_time FROM metric_points WHERE run_id = ? AND key = 'loss' ORDER BY step",
        )
          .all(id);
      }
    })[1]);
  const rawText = `raw SELECT of the same rows ${median(rawRead).toFixed(0)} ms`;
  report({
    name: "metrics:query 20 runs × 100,000 points → 2,000 each, warm",
    value: ms(median(many), `${median(many).toFixed(0)} ms median of 5`),
    baseline: ms(median(rawRead), rawText),
    target: { op: "<=", value: 100 },
  });
  report({
    name: "metrics:query 20 runs × 100,000 points → 2,000 each, right after a restart",
    value: ms(afterRestartMany),
    baseline: ms(median(rawRead), rawText),
    target: { op: "<=", value: 100 },
  });
  report({
    name: "metrics:query 20 runs × 100,000 points, the very first read (rows, before sealing)",
    value: ms(firstMany),
    baseline: ms(median(rawRead), rawText),
    target: { op: "<=", value: median(rawRead) },
    note: "≤ the raw SELECT",
  });
  report({
    name: "metrics:query 1,000,000 points, the very first read (rows, before sealing)",
    value: ms(firstBig),
    baseline: null,
    target: null,
    note: "≤ the raw SELECT of it",
  });
  restarted.db.close();
  if (options.restarts) {
    ctx.db.sqlite.exec(`VACUUM INTO '${dir}/blocks-only.db'`);
    const old = context(`${dir}/blocks-only.db`);
    old.db.sqlite.exec(
      `DELETE FROM metric_summaries; DELETE FROM metric_summaries_coarse;
       UPDATE metric_seals SET summarized_step = NULL`,
    );
    old.db.close();
    const times = { summaries: [[], []] as number[][], blocks: [[], []] as number[][] };
    for (let r = 0; r < options.restarts; r++) {
      for (
        const [store, t] of [["query", times.summaries], ["blocks-only", times.blocks]] as const
      ) {
        const c = context(`${dir}/${store}.db`);
        t[0].push((await timeAsync(() => queryBig(c)))[1]);
        t[1].push((await timeAsync(() => queryMany(c)))[1]);
        c.db.close();
      }
    }
    const range = (xs: number[]) =>
      ms(
        median(xs),
        `${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)} ms, median ${
          median(xs).toFixed(0)
        } of ${xs.length}`,
      );
    for (
      const [what, k] of [["1,000,000 points → 2,000", 0], [
        "20 runs × 100,000 points → 2,000 each",
        1,
      ]] as const
    ) {
      report({
        name: `metrics:query ${what}, ${options.restarts} more restarts`,
        value: range(times.summaries[k]),
        baseline: {
          ...range(times.blocks[k]),
          text: `blocks only (no summaries) ${range(times.blocks[k]).text}`,
        },
        target: { op: "<=", value: k === 0 ? 50 : 100 },
      });
    }
  }
  ctx.db.close();
}
