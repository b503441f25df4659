/**
 * The contract of the MCP face: each observe and semantic tool's `structuredContent` is the
 * body its REST route answers for the same question, over `/mcp` with a bearer token, on the
 * seeded database of the REST contract test. A coverage check makes a new read tool need a
 * row; every next_action the answers carry names a tool whose input accepts its args.
 */
import { assert, assertEquals } from "./assert.ts";
import { type Seed, seededHarness } from "./_seed.ts";
import { call, httpClient, postToolCall } from "./_mcp_client.ts";
import { until } from "./_processes.ts";
import { TOOLS } from "../mcp/mod.ts";
import { TOOL_MAX_POINTS } from "../mcp/tools/get_metrics.ts";
import { TOOL_LOG_LINES } from "../mcp/tools/get_logs.ts";
import { TOOL_PAGE_SIZE } from "../mcp/_tool.ts";

interface ToolContract {
  tool: string;
  case?: string;
  args: (s: Seed) => Record<string, unknown>;
  /** The REST request whose body the tool's answer must equal. */
  rest: (s: Seed) => string | { path: string; body: unknown };
}

const page = `limit=${TOOL_PAGE_SIZE}`;

const TOOL_ROWS: ToolContract[] = [
  { tool: "get_status", args: () => ({}), rest: () => "/api/status" },
  { tool: "list_nodes", args: () => ({}), rest: () => "/api/nodes" },
  { tool: "list_jobs", case: "default page", args: () => ({}), rest: () => `/api/jobs?${page}` },
  {
    tool: "list_jobs",
    case: "filters and a cursor",
    args: () => ({ status: "QUEUED", project: "nlp", limit: 1, cursor: "3" }),
    rest: () => "/api/jobs?status=QUEUED&project=nlp&limit=1&cursor=3",
  },
  {
    tool: "get_job",
    args: (s) => ({ job_id: s.failedJob }),
    rest: (s) => `/api/jobs/${s.failedJob}`,
  },
  { tool: "list_runs", args: () => ({}), rest: () => `/api/runs?${page}` },
  {
    tool: "list_runs",
    case: "search",
    args: () => ({ project: "nlp", q: "bert", limit: 1 }),
    rest: () => "/api/runs?project=nlp&q=bert&limit=1",
  },
  {
    tool: "get_run",
    args: (s) => ({ run_id: s.failedRun }),
    rest: (s) => `/api/runs/${s.failedRun}`,
  },
  {
    tool: "get_metrics",
    case: "series",
    args: (s) => ({ runs: [s.failedRun, s.sdkRun], keys: ["train/loss", "eval/none"] }),
    rest: (s) => ({
      path: "/api/runs/metrics:query",
      body: {
        runs: [s.failedRun, s.sdkRun],
        keys: ["train/loss", "eval/none"],
        max_points: TOOL_MAX_POINTS,
      },
    }),
  },
  {
    tool: "get_metrics",
    case: "downsampled",
    args: (s) => ({ runs: [s.runningRun], keys: ["train/loss"], max_points: 3 }),
    rest: (s) => ({
      path: "/api/runs/metrics:query",
      body: { runs: [s.runningRun], keys: ["train/loss"], max_points: 3 },
    }),
  },
  {
    tool: "get_metrics",
    case: "a run's keys",
    args: (s) => ({ runs: [s.runningRun] }),
    rest: (s) => `/api/runs/${s.runningRun}/metrics`,
  },
  {
    tool: "get_logs",
    case: "tail",
    args: (s) => ({ run_id: s.failedRun }),
    rest: (s) => `/api/runs/${s.failedRun}/logs?limit=${TOOL_LOG_LINES}`,
  },
  {
    tool: "get_logs",
    case: "after a line",
    args: (s) => ({ run_id: s.failedRun, after_seq: 0, limit: 5 }),
    rest: (s) => `/api/runs/${s.failedRun}/logs?after_seq=0&limit=5`,
  },
  { tool: "list_events", args: () => ({}), rest: () => `/api/events?${page}` },
  {
    tool: "list_events",
    case: "filters",
    args: (s) => ({ run_id: s.runningRun, severity: "warning" }),
    rest: (s) => `/api/events?run_id=${s.runningRun}&severity=warning&${page}`,
  },
  {
    tool: "list_checkpoints",
    args: (s) => ({ run_id: s.failedRun }),
    rest: (s) => `/api/runs/${s.failedRun}/checkpoints`,
  },
  { tool: "list_experiments", args: () => ({}), rest: () => "/api/experiments" },
  {
    tool: "list_experiments",
    case: "one project",
    args: () => ({ project: "nlp" }),
    rest: () => "/api/experiments?project=nlp",
  },
  {
    tool: "diagnose_run",
    case: "running",
    args: (s) => ({ run_id: s.runningRun }),
    rest: (s) => `/api/runs/${s.runningRun}/diagnosis`,
  },
  {
    tool: "diagnose_run",
    case: "failed",
    args: (s) => ({ run_id: s.failedRun }),
    rest: (s) => `/api/runs/${s.failedRun}/diagnosis`,
  },
  {
    tool: "compare_runs",
    args: (s) => ({ runs: [s.failedRun, s.sdkRun], metric: "train/loss" }),
    rest: (s) => `/api/runs/compare?runs=${s.failedRun},${s.sdkRun}&metric=train/loss`,
  },
  {
    tool: "compare_checkpoints",
    args: (s) => ({ run_id: s.failedRun }),
    rest: (s) => `/api/runs/${s.failedRun}/checkpoints:compare`,
  },
  {
    tool: "get_best_checkpoint",
    case: "run",
    args: (s) => ({ run_id: s.failedRun }),
    rest: (s) => `/api/checkpoints:recommend?run=${s.failedRun}`,
  },
  {
    tool: "get_best_checkpoint",
    case: "experiment",
    args: () => ({ experiment: "nlp/base" }),
    rest: () => "/api/checkpoints:recommend?experiment=nlp/base",
  },
  {
    tool: "get_sweep",
    args: (s) => ({ sweep_id: s.sweep }),
    rest: (s) => `/api/sweeps/${s.sweep}`,
  },
  {
    tool: "query_runs",
    args: () => ({ where: { project: "nlp", status: ["FAILED", "SUCCEEDED"] }, limit: 3 }),
    rest: () => ({
      path: "/api/runs:query",
      body: { where: { project: "nlp", status: ["FAILED", "SUCCEEDED"] }, limit: 3 },
    }),
  },
  {
    tool: "get_lineage",
    case: "run",
    args: (s) => ({ run_id: s.failedRun }),
    rest: (s) => `/api/lineage?run_id=${s.failedRun}`,
  },
  {
    tool: "get_lineage",
    case: "experiment",
    args: () => ({ experiment: "nlp/base" }),
    rest: () => "/api/lineage?experiment=nlp/base",
  },
  {
    tool: "explain_failure",
    args: (s) => ({ run_id: s.failedRun }),
    rest: (s) => `/api/runs/${s.failedRun}/failure`,
  },
];

const rowName = (r: ToolContract) => r.case ? `${r.tool} (${r.case})` : r.tool;

Deno.test("each observe and semantic tool's structuredContent is its REST route's body", async () => {
  const { h, seed } = await seededHarness();
  try {
    await using client = await httpClient("http://gpuctl.test", h.tokens.read, h.app.fetch);
    for (const row of TOOL_ROWS) {
      const req = row.rest(seed);
      const res = typeof req === "string"
        ? await h.call("GET", req, { token: h.tokens.read })
        : await h.call("POST", req.path, { token: h.tokens.read, body: req.body });
      assertEquals(res.status, 200, `${rowName(row)}: ${res.text}`);
      assertEquals(await call(client, row.tool, row.args(seed)), res.json, rowName(row));
    }
  } finally {
    await h.close();
  }
});

Deno.test("every read tool but wait_for_run has a contract row", () => {
  const reads = TOOLS.filter((t) => t.kind === "observe" || t.kind === "semantic").map((t) =>
    t.name
  );
  const covered = new Set(TOOL_ROWS.map((r) => r.tool));
  assertEquals(reads.filter((t) => !covered.has(t)), []);
  assertEquals(reads.length, 19);
});

Deno.test("every next_action in the answers names a tool whose input takes its args", async () => {
  const { h, seed } = await seededHarness();
  try {
    await using client = await httpClient("http://gpuctl.test", h.tokens.read, h.app.fetch);
    let seen = 0;
    for (const row of TOOL_ROWS) {
      const answer = await call(client, row.tool, row.args(seed));
      for (const a of answer.next_actions ?? []) {
        const tool = TOOLS.find((t) => t.name === a.tool);
        assert(tool, `${rowName(row)}: next action ${a.tool} is not a tool`);
        const parsed = tool.input.safeParse(a.args);
        assert(parsed.success, `${rowName(row)}: ${a.tool} ${JSON.stringify(a.args)}`);
        seen++;
      }
    }
    assert(seen >= 8, `only ${seen} next actions seen`);
  } finally {
    await h.close();
  }
});

Deno.test("/mcp refuses a page of another origin, a missing token and GET", async () => {
  const { h } = await seededHarness();
  try {
    const body = { jsonrpc: "2.0", id: 1, method: "tools/list" };
    const headers = { accept: "application/json, text/event-stream" };
    const evil = await h.call("POST", "/mcp", {
      token: h.tokens.read,
      body,
      headers: { ...headers, origin: "http://rebound.example:8600" },
    });
    assertEquals([evil.status, evil.json.error.code], [403, "OriginRefused"]);
    const local = await h.call("POST", "/mcp", {
      token: h.tokens.read,
      body,
      headers: { ...headers, origin: "http://localhost:6274" },
    });
    assertEquals(local.status, 200, local.text);
    // The answer comes as one SSE message.
    const data = /^data: (.*)$/m.exec(local.text)![1];
    assertEquals(JSON.parse(data).result.tools.length, 29);
    const none = await h.call("POST", "/mcp", { token: null, body, headers });
    assertEquals([none.status, none.json.error.code], [401, "Unauthorized"]);
    const get = await h.call("GET", "/mcp", { token: h.tokens.read, headers });
    assertEquals(get.status, 405);
  } finally {
    await h.close();
  }
});

Deno.test("a client that goes away mid-wait ends its wait_for_run: nothing keeps listening", async () => {
  const { h, seed } = await seededHarness();
  const abort = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: abort.signal, onListen: () => {} },
    h.app.fetch,
  );
  try {
    const before = h.ctx.bus.listenerCount("events");
    const leave = new AbortController();
    const res = await postToolCall(
      `http://127.0.0.1:${server.addr.port}/mcp`,
      "wait_for_run",
      { run_id: seed.runningRun, timeout_s: 600 },
      { token: h.tokens.read, signal: leave.signal },
    );
    assertEquals(res.status, 200);
    await until(() => h.ctx.bus.listenerCount("events") > before, 5_000, "the wait listening");
    leave.abort();
    await res.body?.cancel().catch(() => {});
    await until(() => h.ctx.bus.listenerCount("events") === before, 5_000, "the wait gone");
  } finally {
    abort.abort();
    await server.finished;
    await h.close();
  }
});
