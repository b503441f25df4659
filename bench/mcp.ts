/**
 * The MCP observe and semantic tools through `/mcp` (streamable HTTP into the app's handler,
 * a fresh MCP server per call as in production), next to the REST routes that answer the same
 * questions through the same handler: what the MCP face adds.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createContext } from "../server/context.ts";
import { openDatabase } from "../server/db/mod.ts";
import { createApp } from "../server/http/app.ts";
import { createToken } from "../server/auth/service.ts";
import { ingestBatch, registerSdkRun } from "../server/runs/service.ts";
import { BenchReport, type Report } from "./report.ts";

const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

export async function benchMcp(report: Report): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-bench-mcp-" });
  const ctx = createContext({ db: openDatabase(`${dir}/gpuctl.db`), backupDir: `${dir}/b` });
  const app = createApp(ctx);
  const token = createToken(ctx, { name: "bench", scope: "read" }).token;
  // 50 runs of one experiment, 20,000 points each on 2 keys, a checkpoint every 2,000 steps.
  const runs: string[] = [];
  for (let r = 0; r < 50; r++) {
    const run = registerSdkRun(ctx, {
      project: "bench",
      experiment: "sweep",
      name: `lr-${r}`,
      config: { lr: 0.001 * (r + 1) },
      max_steps: 10_000,
    }).run;
    runs.push(run.id);
    const points = [];
    for (let s = 0; s < 10_000; s++) {
      points.push({ key: "train/loss", step: s, value: 2 * Math.exp(-s / (3000 + r)) + 0.1 });
      points.push({ key: "eval/loss", step: s, value: 2.1 * Math.exp(-s / (3000 + r)) + 0.12 });
    }
    const checkpoints = Array.from({ length: 5 }, (_, i) => ({
      path: `/ckpt/${run.id}/step-${(i + 1) * 2000}`,
      step: (i + 1) * 2000 - 1,
    }));
    ingestBatch(ctx, run.id, { points, checkpoints, step: 9_999, status: "SUCCEEDED" });
  }
  const [a, b] = runs;
  const calls: [string, Record<string, unknown>, string][] = [
    ["get_status", {}, "/api/status"],
    ["list_runs", {}, "/api/runs?limit=20"],
    ["get_run", { run_id: a }, `/api/runs/${a}`],
    ["get_metrics", { runs: [a, b], keys: ["train/loss"] }, ""],
    ["get_logs", { run_id: a }, `/api/runs/${a}/logs?limit=100`],
    ["list_events", {}, "/api/events?limit=20"],
    ["list_checkpoints", { run_id: a }, `/api/runs/${a}/checkpoints`],
    ["list_experiments", {}, "/api/experiments"],
    ["diagnose_run", { run_id: a }, `/api/runs/${a}/diagnosis`],
    ["compare_runs", { runs: runs.slice(0, 10) }, `/api/runs/compare?runs=${runs.slice(0, 10)}`],
    [
      "get_best_checkpoint",
      { experiment: "bench/sweep" },
      "/api/checkpoints:recommend?experiment=bench/sweep",
    ],
  ];
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const rest = async (path: string) => {
    const req = path
      ? new Request(`http://bench${path}`, { headers })
      : new Request("http://bench/api/runs/metrics:query", {
        method: "POST",
        headers,
        body: JSON.stringify({ runs: [a, b], keys: ["train/loss"], max_points: 200 }),
      });
    await (await app.fetch(req)).text();
  };
  const client = new Client({ name: "bench", version: "0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL("http://bench/mcp"), {
      requestInit: { headers: { authorization: `Bearer ${token}` } },
      fetch: (url: string | URL, init?: RequestInit) => app.fetch(new Request(url, init)),
    }),
  );
  const mcpMs: number[] = [];
  const restMs: number[] = [];
  for (let round = 0; round < 22; round++) {
    for (const [tool, args, path] of calls) {
      let t = performance.now();
      await client.callTool({ name: tool, arguments: args });
      const m = performance.now() - t;
      t = performance.now();
      await rest(path);
      const r = performance.now() - t;
      if (round >= 2) { // the first rounds warm the caches and the JIT
        mcpMs.push(m);
        restMs.push(r);
      }
    }
  }
  await client.close();
  report({
    name:
      `MCP observe and semantic tools over /mcp (${calls.length} tools, 50 runs × 20,000 points), p95`,
    value: {
      value: percentile(mcpMs, 0.95),
      unit: "ms",
      text: `p50 ${percentile(mcpMs, 0.5).toFixed(1)} ms, p95 ${
        percentile(mcpMs, 0.95).toFixed(1)
      } ms`,
    },
    baseline: {
      value: percentile(restMs, 0.95),
      unit: "ms",
      text: `the REST routes of the same questions p50 ${
        percentile(restMs, 0.5).toFixed(1)
      } ms, p95 ${percentile(restMs, 0.95).toFixed(1)} ms`,
    },
    target: { op: "<=", value: 50 },
  });
  ctx.db.close();
  await Deno.remove(dir, { recursive: true });
}

if (import.meta.main) await benchMcp(new BenchReport().add);
