/**
 * The contract between the faces and the services: for every read route, the REST response
 * body is the service function's result for the same arguments, after a JSON round trip.
 * Every row runs against one seeded database; a coverage check walks the app's route table so
 * a new read route cannot go without a row.
 *
 * To add a route: add a row to READS (its request, and the service call with the same
 * arguments). To add another face (an MCP tool), give the row an optional field for it and
 * a loop beside "each read route answers …" that compares that face's result the same way.
 */
import { compareRunCode, getLineage, getRunCode, getRunDetail } from "../server/lineage/service.ts";
import { queryRuns } from "../server/runs/query.ts";
import { runMetricRows } from "../server/semantic/metric_rows.ts";
import { assertEquals } from "./assert.ts";
import { createHarness } from "./_harness.ts";
import { type Seed, seededHarness } from "./_seed.ts";
import type { Context } from "../server/context.ts";
import {
  checkpoints as checkpointsDb,
  evaluations as evaluationsDb,
  logs as logsDb,
  runs as runsDb,
} from "../server/db/mod.ts";
import { listEvents } from "../server/events/service.ts";
import { getEvaluation, listEvaluations } from "../server/evaluations/mod.ts";
import { getRunMetrics, queryMetrics, readPointsPage } from "../server/metrics/service.ts";
import { getLogs, listCheckpoints, listRunGroups, listRuns } from "../server/runs/service.ts";
import { getJob, listJobs } from "../server/jobs/service.ts";
import { getNode, listNodes } from "../server/nodes/service.ts";
import { getStatus } from "../server/status/service.ts";
import { authenticate, listTokens, whoami } from "../server/auth/service.ts";
import { health } from "../server/admin/service.ts";
import { getSweep, listSweeps } from "../server/sweeps/service.ts";
import { getMetricDefinitions, listExperiments, listProjects } from "../server/projects/service.ts";
import {
  compareCheckpointsOfRun,
  compareRunsByIds,
  diagnoseRunById,
  explainRunFailure,
  recommendCheckpoint,
} from "../server/semantic/mod.ts";

/** One read route's contract: the request, and the same question asked of the service. */
export interface ReadContract {
  /** The route exactly as the route table declares it: `GET /api/runs/:id`. */
  route: string;
  /** What this row asks, when a route has more than one row. */
  case?: string;
  /** The request path with its query (and the JSON body of a POST read). */
  request: (s: Seed) => string | { path: string; body: unknown };
  /** The service function's result for the same arguments (awaited when a promise). */
  service: (ctx: Context, s: Seed) => unknown;
}

/** Each read route with its service call. Keep rows grouped by resource. */
export const READS: ReadContract[] = [
  // Projects, experiments, metric definitions.
  { route: "GET /api/projects", request: () => "/api/projects", service: listProjects },
  {
    route: "GET /api/experiments",
    case: "all",
    request: () => "/api/experiments",
    service: (ctx) => listExperiments(ctx, {}),
  },
  {
    route: "GET /api/experiments",
    case: "one project",
    request: () => "/api/experiments?project=nlp",
    service: (ctx) => listExperiments(ctx, { project: "nlp" }),
  },
  {
    route: "GET /api/metric-definitions",
    request: () => "/api/metric-definitions",
    service: getMetricDefinitions,
  },

  // The semantic layer.
  {
    route: "GET /api/runs/compare",
    request: (s) => `/api/runs/compare?runs=${s.failedRun},${s.sdkRun}&metric=train/loss`,
    service: (ctx, s) => compareRunsByIds(ctx, [s.failedRun, s.sdkRun], "train/loss"),
  },
  {
    route: "GET /api/runs/:id/metric-summary",
    request: (s) => `/api/runs/${s.runningRun}/metric-summary`,
    service: async (ctx, s) => ({ items: await runMetricRows(ctx, s.runningRun) }),
  },
  {
    route: "GET /api/runs/:id/diagnosis",
    case: "running",
    request: (s) => `/api/runs/${s.runningRun}/diagnosis`,
    service: (ctx, s) => diagnoseRunById(ctx, s.runningRun),
  },
  {
    route: "GET /api/runs/:id/diagnosis",
    case: "failed",
    request: (s) => `/api/runs/${s.failedRun}/diagnosis`,
    service: (ctx, s) => diagnoseRunById(ctx, s.failedRun),
  },
  {
    route: "GET /api/runs/:id/failure",
    request: (s) => `/api/runs/${s.failedRun}/failure`,
    service: (ctx, s) => explainRunFailure(ctx, s.failedRun),
  },
  {
    route: "GET /api/runs/:id/checkpoints:compare",
    request: (s) => `/api/runs/${s.failedRun}/checkpoints:compare`,
    service: (ctx, s) => compareCheckpointsOfRun(ctx, s.failedRun),
  },
  {
    route: "GET /api/checkpoints:recommend",
    case: "run",
    request: (s) => `/api/checkpoints:recommend?run=${s.failedRun}`,
    service: (ctx, s) => recommendCheckpoint(ctx, { run: s.failedRun }),
  },
  {
    route: "GET /api/checkpoints:recommend",
    case: "experiment",
    request: () => "/api/checkpoints:recommend?experiment=nlp/base",
    service: (ctx) => recommendCheckpoint(ctx, { experiment: "nlp/base" }),
  },
  // Runs, metrics, logs, checkpoints, evaluations, events.
  {
    route: "GET /api/runs",
    case: "all",
    request: () => "/api/runs",
    service: (ctx) => listRuns(ctx, {}),
  },
  {
    route: "GET /api/runs",
    case: "filters, search and a page",
    request: () => "/api/runs?project=nlp&experiment=base&q=BERT&limit=1",
    service: (ctx) => listRuns(ctx, { project: "nlp", experiment: "base", q: "BERT", limit: 1 }),
  },
  {
    route: "GET /api/runs",
    case: "the next page",
    // The seed made three runs; a cursor names the position below which the page starts.
    request: () => "/api/runs?cursor=3&limit=1",
    service: (ctx) => listRuns(ctx, { cursor: "3", limit: 1 }),
  },
  {
    route: "GET /api/run-groups",
    case: "all",
    request: () => "/api/run-groups",
    service: (ctx) => listRunGroups(ctx, {}),
  },
  {
    route: "GET /api/run-groups",
    case: "one status",
    request: () => "/api/run-groups?status=FAILED",
    service: (ctx) => listRunGroups(ctx, { status: "FAILED" }),
  },
  {
    route: "GET /api/runs/:id",
    request: (s) => `/api/runs/${s.failedRun}`,
    service: (ctx, s) => getRunDetail(ctx, s.failedRun),
  },
  {
    route: "GET /api/runs/:id/code",
    request: (s) => `/api/runs/${s.failedRun}/code`,
    service: (ctx, s) => ({ run_id: s.failedRun, code: getRunCode(ctx, s.failedRun) }),
  },
  {
    route: "GET /api/code/compare",
    request: (s) => `/api/code/compare?runs=${s.failedRun},${s.runningRun}`,
    service: (ctx, s) => compareRunCode(ctx, s.failedRun, s.runningRun),
  },
  {
    route: "POST /api/runs:query",
    request: () => ({
      path: "/api/runs:query",
      body: { where: { project: "nlp" }, order_by: "metric.train/loss.best", limit: 5 },
    }),
    service: (ctx) =>
      queryRuns(ctx, { where: { project: "nlp" }, order_by: "metric.train/loss.best", limit: 5 }),
  },
  {
    route: "GET /api/lineage",
    case: "run",
    request: (s) => `/api/lineage?run_id=${s.failedRun}`,
    service: (ctx, s) => getLineage(ctx, { run_id: s.failedRun }),
  },
  {
    route: "GET /api/lineage",
    case: "experiment",
    request: () => "/api/lineage?experiment=nlp/base",
    service: (ctx) => getLineage(ctx, { experiment: "nlp/base" }),
  },
  {
    route: "GET /api/runs/:id/metrics",
    case: "keys",
    request: (s) => `/api/runs/${s.runningRun}/metrics`,
    service: (ctx, s) => getRunMetrics(ctx, s.runningRun, {}),
  },
  {
    route: "GET /api/runs/:id/metrics",
    case: "series",
    request: (s) => `/api/runs/${s.runningRun}/metrics?keys=train/loss,eval/none&max_points=4`,
    service: (ctx, s) =>
      getRunMetrics(ctx, s.runningRun, { keys: ["train/loss", "eval/none"], max_points: 4 }),
  },
  {
    route: "POST /api/runs/metrics:query",
    request: (s) => ({
      path: "/api/runs/metrics:query",
      body: { runs: [s.failedRun, s.sdkRun, "r-none"], keys: ["train/loss"], max_points: 3 },
    }),
    service: (ctx, s) =>
      queryMetrics(ctx, {
        runs: [s.failedRun, s.sdkRun, "r-none"],
        keys: ["train/loss"],
        max_points: 3,
      }),
  },
  {
    route: "GET /api/runs/:id/metrics/points",
    request: (s) => `/api/runs/${s.failedRun}/metrics/points?key=train/loss&cursor=10&limit=2`,
    service: (ctx, s) =>
      readPointsPage(ctx, s.failedRun, { key: "train/loss", cursor: "10", limit: 2 }),
  },
  {
    route: "GET /api/runs/:id/logs",
    case: "tail",
    request: (s) => `/api/runs/${s.failedRun}/logs?limit=1`,
    service: (ctx, s) => getLogs(ctx, s.failedRun, { limit: 1 }),
  },
  {
    route: "GET /api/runs/:id/logs",
    case: "after a line",
    request: (s) => `/api/runs/${s.failedRun}/logs?after_seq=0`,
    service: (ctx, s) => getLogs(ctx, s.failedRun, { after_seq: 0 }),
  },
  {
    route: "GET /api/runs/:id/checkpoints",
    request: (s) => `/api/runs/${s.failedRun}/checkpoints`,
    service: (ctx, s) => listCheckpoints(ctx, s.failedRun),
  },
  {
    route: "GET /api/checkpoints/:id/evaluations",
    request: (s) => `/api/checkpoints/${s.checkpoint}/evaluations`,
    service: (ctx, s) => listEvaluations(ctx, s.checkpoint),
  },
  {
    route: "GET /api/evaluations/:id",
    request: (s) => `/api/evaluations/${s.evaluation}`,
    service: (ctx, s) => getEvaluation(ctx, s.evaluation),
  },
  {
    route: "GET /api/events",
    case: "all",
    request: () => "/api/events",
    service: (ctx) => listEvents(ctx, {}),
  },
  {
    route: "GET /api/events",
    case: "filters and a page",
    request: (s) => `/api/events?run_id=${s.runningRun}&severity=warning&limit=1`,
    service: (ctx, s) => listEvents(ctx, { run_id: s.runningRun, severity: "warning", limit: 1 }),
  },
  // Nodes, jobs, status, tokens, auth.
  {
    route: "GET /api/status",
    request: () => "/api/status",
    service: (ctx, s) => getStatus(ctx, authenticate(ctx, s.token)!.token_id),
  },
  { route: "GET /api/nodes", request: () => "/api/nodes", service: listNodes },
  {
    route: "GET /api/nodes/:id",
    request: (s) => `/api/nodes/${s.node}`,
    service: (ctx, s) => getNode(ctx, s.node),
  },
  {
    route: "GET /api/jobs",
    case: "all",
    request: () => "/api/jobs",
    service: (ctx) => listJobs(ctx, {}),
  },
  {
    route: "GET /api/jobs",
    case: "filters and a page",
    request: () => "/api/jobs?status=QUEUED&project=nlp&experiment=base&limit=1",
    service: (ctx) =>
      listJobs(ctx, { status: "QUEUED", project: "nlp", experiment: "base", limit: 1 }),
  },
  {
    route: "GET /api/jobs",
    case: "the next page",
    request: () => "/api/jobs?cursor=3&limit=1",
    service: (ctx) => listJobs(ctx, { cursor: "3", limit: 1 }),
  },
  {
    route: "GET /api/jobs/:id",
    request: (s) => `/api/jobs/${s.failedJob}`,
    service: (ctx, s) => getJob(ctx, s.failedJob),
  },
  { route: "GET /api/tokens", request: () => "/api/tokens", service: listTokens },
  {
    route: "GET /api/auth/whoami",
    request: () => "/api/auth/whoami",
    service: (ctx, s) => whoami(authenticate(ctx, s.token)!, ctx),
  },
  { route: "GET /api/health", request: () => "/api/health", service: health },
  // Sweeps.
  {
    route: "GET /api/sweeps",
    request: () => "/api/sweeps?project=nlp",
    service: (ctx) => listSweeps(ctx, { project: "nlp" }),
  },
  {
    route: "GET /api/sweeps/:id",
    request: (s) => `/api/sweeps/${s.sweep}`,
    service: (ctx, s) => getSweep(ctx, s.sweep),
  },
];

/**
 * Read routes that have no row on purpose: their answer is not one JSON body a service can
 * return. The streams are covered by tests/sse_test.ts, the agent socket by the gateway tests.
 */
export const NOT_A_BODY: Record<string, string> = {
  "GET /api/events/stream": "an SSE stream of events, open until the client leaves",
  "GET /api/runs/:id/wait":
    "held open until the run ends or an awaited event (tests/api_waits_test.ts)",
  "GET /api/jobs/:id/wait":
    "held open until the job's run ends or an event (tests/api_waits_test.ts)",
  "GET /api/sweeps/:id/wait":
    "held open until the sweep ends or stops a trial (tests/api_waits_test.ts)",
  "GET /api/runs/:id/metrics/stream": "an SSE stream of points, open until the run ends",
  "GET /api/runs/metrics:stream": "an SSE stream of several runs' points, open until all end",
  "GET /api/runs/:id/logs/stream": "an SSE stream of log lines, open until the run ends",
  "GET /api/agent/ws": "a WebSocket upgrade for agents, not a JSON answer",
  "POST /mcp": "JSON-RPC for MCP clients; tests/mcp_contract_test.ts holds each tool to its route",
};

const rowName = (r: ReadContract) => r.case ? `${r.route} (${r.case})` : r.route;

Deno.test("each read route answers exactly what its service function returns", async () => {
  const { h, seed } = await seededHarness();
  try {
    for (const row of READS) {
      const req = row.request(seed);
      const [method] = row.route.split(" ");
      const res = typeof req === "string"
        ? await h.call(method, req)
        : await h.call(method, req.path, { body: req.body });
      assertEquals(res.status, 200, `${rowName(row)}: ${res.text}`);
      const expected = JSON.parse(JSON.stringify(await row.service(h.ctx, seed)));
      assertEquals(res.json, expected, rowName(row));
    }
  } finally {
    await h.close();
  }
});

Deno.test("every read route has a contract row, or is not a JSON body", async () => {
  const h = await createHarness();
  try {
    const reads = h.app.routes.filter((r) => r.method === "GET" || r.scope === "read")
      .map((r) => `${r.method} ${r.path}`);
    const known = new Set(h.app.routes.map((r) => `${r.method} ${r.path}`));
    const covered = new Set(READS.map((r) => r.route));
    const missing = reads.filter((r) => !covered.has(r) && !(r in NOT_A_BODY));
    assertEquals(missing, [], "read routes without a row in READS");
    const stale = READS.map((r) => r.route).filter((r) => !known.has(r));
    assertEquals(stale, [], "rows for routes the app does not serve");
    const notBody = Object.keys(NOT_A_BODY).filter((r) => covered.has(r) || !known.has(r));
    assertEquals(notBody, [], "NOT_A_BODY routes that have a row or are gone");
  } finally {
    await h.close();
  }
});

Deno.test("the seed gives the rows something to compare: runs in each state, evaluations, events", async () => {
  const { h, seed } = await seededHarness();
  try {
    const status = (id: string) => runsDb.getRun(h.ctx.db, id)?.status;
    assertEquals(
      [status(seed.failedRun), status(seed.runningRun), status(seed.sdkRun)],
      ["FAILED", "RUNNING", "SUCCEEDED"],
    );
    assertEquals(
      evaluationsDb.getEvaluation(h.ctx.db, seed.evaluation)?.job_id,
      seed.evaluationJob,
    );
    assertEquals(checkpointsDb.listCheckpoints(h.ctx.db, seed.failedRun).length, 1);
    assertEquals(logsDb.readLogs(h.ctx.db, seed.failedRun, undefined, 10).length, 2);
    const experiments = listExperiments(h.ctx, { project: "nlp" }).items;
    const base = experiments.find((e) => e.name === "base")!;
    assertEquals(base.runs.by_status, { FAILED: 1, RUNNING: 1, SUCCEEDED: 1 });
    assertEquals(base.best_primary?.key, "train/loss");
    // The run rows' search finds the two job runs, and the page after the newest run is not empty.
    assertEquals(listRuns(h.ctx, { q: "BERT" }).items.length, 2);
    assertEquals(listRuns(h.ctx, { cursor: "3", limit: 1 }).items.length, 1);
    assertEquals(
      listEvents(h.ctx, { run_id: seed.runningRun, severity: "warning" }).items.length,
      1,
    );
  } finally {
    await h.close();
  }
});
