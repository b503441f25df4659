/**
 * `deno task bench`: the DESIGN targets, each measured next to a raw baseline from the same
 * run on the same machine. Numbers, not pass/fail: this machine is shared and noisy.
 */
import { type Context, createContext } from "../server/context.ts";
import { openDatabase } from "../server/db/mod.ts";
import { placeJobs } from "../server/scheduler/mod.ts";
import { benchCluster, benchSdkOverhead } from "./cluster.ts";
import { benchCharts } from "./charts.ts";
import { benchIngest } from "./ingest.ts";
import { benchConsole } from "./console.ts";
import { benchMcp } from "./mcp.ts";
import { benchPeers } from "./peers.ts";
import { benchQuery } from "./query.ts";
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

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

// --- Ingest ----------------------------------------------------------------------------
await benchIngest(dir, report);

// --- metrics:query ----------------------------------------------------------------------
await benchQuery(report, dir);

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
