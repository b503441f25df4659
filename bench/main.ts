/**
 * `deno task bench`: the DESIGN targets, each measured next to a raw baseline from the same
 * run on the same machine. Numbers, not pass/fail: this machine is shared and noisy.
 */
import { type Context, createContext } from "../server/context.ts";
import { openDatabase } from "../server/db/mod.ts";
import { ingestBatch, registerSdkRun } from "../server/runs/service.ts";
import { queryMetrics } from "../server/metrics/service.ts";
import { lttb } from "../server/metrics/lttb.ts";
import { BlockSealer } from "../server/metrics/block_sealer.ts";
import { placeJobs } from "../server/scheduler/mod.ts";
import { benchCluster, benchSdkOverhead } from "./cluster.ts";
import { benchCharts } from "./charts.ts";
import { benchIngest } from "./ingest.ts";
import { benchConsole } from "./console.ts";
import { benchMcp } from "./mcp.ts";
import { benchPeers } from "./peers.ts";
import { BenchReport } from "./report.ts";

const dir = await Deno.makeTempDir({ prefix: "gpuctl-bench-" });
const bench = new BenchReport();
const report = bench.add;

function context(path: string): Context {
  return createContext({ db: openDatabase(path), backupDir: `${dir}/backups` });
}

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

// --- Ingest ----------------------------------------------------------------------------
await benchIngest(dir, report);

// --- metrics:query ----------------------------------------------------------------------
{
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
  // sealer ran), the first after a restart (from sealed blocks, an empty cache), then warm.
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
    baseline: ms(median(lttbOnly), `LTTB alone on the same size ${median(lttbOnly).toFixed(0)} ms`),
    target: { op: "<=", value: 50 },
  });
  report({
    name: "metrics:query 1,000,000 points → 2,000, right after a restart (sealed blocks)",
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
  ctx.db.close();
}

// --- Scheduling pass --------------------------------------------------------------------
{
  const queue = Array.from({ length: 10_000 }, (_, i) => ({
    id: `j-${i}`,
    priority: i % 5,
    submit_seq: i,
    gpus: (i % 4) + 1,
    node: null,
  }));
  const nodes = Array.from({ length: 8 }, (_, n) => ({
    id: `gpu-${n}`,
    online: true,
    gpus: Array.from({ length: 8 }, (_, g) => ({ index: g, busy: g < 6 })),
    cpu_slots: 2,
    cpu_running: 0,
    avoid_foreign_gpus: false,
  }));
  const passes = Array.from({ length: 20 }, () => time(() => placeJobs(queue, nodes))[1]);
  const sortOnly = Array.from(
    { length: 20 },
    () =>
      time(() =>
        [...queue].sort((a, b) => b.priority - a.priority || a.submit_seq - b.submit_seq)
      )[1],
  );
  report({
    name: "scheduling pass, 10,000 queued jobs, 8 nodes × 8 GPUs",
    value: {
      value: median(passes),
      unit: "ms",
      text: `${median(passes).toFixed(1)} ms median of 20`,
    },
    baseline: {
      value: median(sortOnly),
      unit: "ms",
      text: `sorting the queue alone ${median(sortOnly).toFixed(1)} ms`,
    },
    target: { op: "<=", value: 20 },
  });
}

// --- Server memory ----------------------------------------------------------------------
{
  // The real server process, idle after start-up, read from /proc.
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../server/main.ts", import.meta.url).pathname,
      "serve",
      "--port",
      "0",
    ],
    env: { GPUCTL_HOME: `${dir}/home` },
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  let banner = "";
  while (!banner.includes("listening")) {
    const { value, done } = await reader.read();
    if (done) break;
    banner += new TextDecoder().decode(value);
  }
  await new Promise((r) => setTimeout(r, 1000));
  const status = await Deno.readTextFile(`/proc/${child.pid}/status`);
  const rssMb = Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
  const self = Number(/VmRSS:\s+(\d+)/.exec(await Deno.readTextFile("/proc/self/status"))![1]);
  child.kill("SIGTERM");
  await child.status;
  reader.releaseLock();
  await child.stdout.cancel();
  const bare = await bareDenoRss();
  report({
    name: "server RSS idle (real server process)",
    value: { value: rssMb, unit: "MB", text: `${rssMb.toFixed(0)} MB` },
    baseline: {
      value: bare,
      unit: "MB",
      text: `a bare deno process ${bare.toFixed(0)} MB; this bench ${(self / 1024).toFixed(0)} MB`,
    },
    target: { op: "<=", value: 150 },
  });
}

async function bareDenoRss(): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "await new Promise((r) => setTimeout(r, 3000))"],
    stdout: "null",
    stderr: "null",
  }).spawn();
  await new Promise((r) => setTimeout(r, 1000));
  const status = await Deno.readTextFile(`/proc/${child.pid}/status`);
  child.kill("SIGTERM");
  await child.status;
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
}

{
  const ctx = context(`${dir}/console.db`);
  await benchConsole(ctx, report);
  ctx.db.close();
}
await benchCharts(report);
await benchCluster(report);
await benchPeers(
  report,
  bench.rows.find((r) => r.name.startsWith("submit → process started"))?.value.value ?? null,
);
await benchSdkOverhead(report);
await benchMcp(report);

await Deno.remove(dir, { recursive: true });
await bench.write(new URL("./results/latest.json", import.meta.url).pathname);
