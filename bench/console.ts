/**
 * The console's budgets: the server render of the Dashboard and of a run's page with 1,000
 * runs in the store (each next to the service reads it renders from), and the JavaScript the
 * Dashboard loads, compressed.
 */
import { gzipSync } from "node:zlib";
import { createToken } from "../server/auth/service.ts";
import { currentIslands, REPO_ROOT, staticImports } from "../server/console/assets.ts";
import { loadDashboard } from "../server/console/dashboard.ts";
import { loadRunDetail } from "../server/console/run_detail.ts";
import type { Context } from "../server/context.ts";
import { createApp } from "../server/http/app.ts";
import { ingestBatch, registerSdkRun } from "../server/runs/service.ts";
import type { Report } from "./report.ts";

const RUNS = 1000;

async function median(n: number, fn: () => Promise<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    xs.push(performance.now() - t);
  }
  return xs.sort((a, b) => a - b)[Math.floor(n / 2)];
}

export async function benchConsole(ctx: Context, report: Report): Promise<void> {
  const islands = currentIslands();
  const app = createApp(ctx, [], { console: { islands } });
  const admin = createToken(ctx, { name: "bench-admin", scope: "admin" }).token;
  let last = "";
  for (let i = 0; i < RUNS; i++) {
    const run = registerSdkRun(ctx, {
      project: `p${i % 5}`,
      experiment: `e${i % 20}`,
      name: `run ${i}`,
    }).run;
    ingestBatch(ctx, run.id, {
      points: Array.from({ length: 200 }, (_, s) => ({
        key: "train/loss",
        step: s,
        value: 2 * Math.exp(-s / 50) + Math.random() * 0.05,
        wall_time: 1_700_000_000 + s,
      })),
    });
    last = run.id;
  }
  const login = await app.fetch(
    new Request("http://bench.test/login", {
      method: "POST",
      headers: { origin: "http://bench.test" },
      body: new URLSearchParams({ token: admin }),
    }),
  );
  const cookie = login.headers.get("set-cookie")!.split(";")[0];
  const page = async (path: string) => {
    const res = await app.fetch(new Request(`http://bench.test${path}`, { headers: { cookie } }));
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status}`);
    await res.text();
  };
  await page("/");
  const dash = await median(21, () => page("/"));
  const dashReads = await median(21, () => loadDashboard(ctx));
  report({
    name: `console Dashboard server render, ${RUNS} runs (the 20 newest running)`,
    value: { value: dash, unit: "ms" },
    baseline: {
      value: dashReads,
      unit: "ms",
      text: `its service reads alone ${dashReads.toFixed(1)} ms`,
    },
    target: { op: "<=", value: 50 },
  });
  await page(`/runs/${last}`);
  const run = await median(21, () => page(`/runs/${last}`));
  const runReads = await median(21, () => loadRunDetail(ctx, last, "overview"));
  report({
    name: `console Run detail (overview of a running run) server render, ${RUNS} runs`,
    value: { value: run, unit: "ms" },
    baseline: {
      value: runReads,
      unit: "ms",
      text: `its service reads alone ${runReads.toFixed(1)} ms`,
    },
    target: { op: "<=", value: 100 },
  });
  const m = islands.manifest;
  if (!m) {
    report({
      name: "console Dashboard JavaScript (gzip)",
      value: { value: NaN, unit: "KB", text: "no island build (deno task build)" },
      baseline: null,
      target: { op: "<=", value: 200 },
    });
    return;
  }
  const dir = `${REPO_ROOT}/static/build`;
  const of = (name: string) => m.files.find((f) => f.startsWith(`${name}-`))!;
  const bytes = (files: string[]) =>
    files.reduce((n, f) => n + gzipSync(Deno.readFileSync(`${dir}/${f}`)).length, 0);
  const dashFiles = staticImports(
    [m.boot, ...["TopBar", "Overview", "ActiveRuns", "Fleet"].map(of)],
    dir,
  );
  report({
    name: "console Dashboard JavaScript (gzip)",
    value: {
      value: bytes(dashFiles) / 1024,
      unit: "KB",
      text: `${(bytes(dashFiles) / 1024).toFixed(1)} KB in ${dashFiles.length} files`,
    },
    baseline: {
      value: bytes(m.files) / 1024,
      unit: "KB",
      text: `every island together ${
        (bytes(m.files) / 1024).toFixed(1)
      } KB (chart.js is most of it)`,
    },
    target: { op: "<=", value: 200 },
  });
}
