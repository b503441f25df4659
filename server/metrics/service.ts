/**
 * Metric reads as the API answers them: many runs' series in one query (LTTB-downsampled),
 * one run's keys and series, and whole series page by page for exports.
 */
import type {
  MetricsQuery,
  PointsPageQuery,
  RunMetricsQuery,
} from "../../protocol/rest/metrics.ts";
import { metricsQuery } from "../../protocol/rest/metrics.ts";
import type { Context } from "../context.ts";
import { validationError } from "../errors.ts";
import { listMetricKeys, requireRun } from "../runs/service.ts";
import { POINTS_PAGE_SIZE, readPointsPage as readPage } from "./points_page.ts";
import {
  type MetricsPlan,
  type MissingSeries,
  planMetricsQuery,
  readPlannedSeries,
  type Series,
} from "./query.ts";

export type { MissingSeries, Series };

/** The body of `POST /api/runs/metrics:query`. */
export interface MetricsAnswer {
  missing: MissingSeries[];
  max_points: number;
  series: Series[];
}

/**
 * `POST /api/runs/metrics:query` as a value: a run or key that does not exist is listed in
 * `missing`; a series longer than `max_points` is downsampled with LTTB. (REST streams the
 * same body series by series: see `metricsQueryStream`.)
 */
export async function queryMetrics(ctx: Context, query: MetricsQuery): Promise<MetricsAnswer> {
  const { head, series } = metricsQueryStream(ctx, query);
  const all: Series[] = [];
  for await (const s of series) all.push(s);
  return { ...head, series: all };
}

/** The same answer as `queryMetrics` in two parts: the head at once, the series as read. */
export function metricsQueryStream(ctx: Context, query: MetricsQuery): {
  head: { missing: MissingSeries[]; max_points: number };
  series: AsyncGenerator<Series>;
} {
  const plan = planMetricsQuery(ctx, query);
  return { head: headOf(plan), series: readPlannedSeries(ctx, plan) };
}

const headOf = (plan: MetricsPlan) => ({ missing: plan.missing, max_points: plan.maxPoints });

/** One key of a run with its summary, as `GET /api/runs/{id}/metrics` lists it. */
export type MetricKey = ReturnType<typeof listMetricKeys>["keys"][number];

/** The body of `GET /api/runs/{id}/metrics`: the keys, and with `keys` their series. */
export type RunMetrics =
  | { run_id: string; keys: MetricKey[] }
  | ({ run_id: string; keys: MetricKey[] } & MetricsAnswer);

/** `GET /api/runs/{id}/metrics` in two parts, like `metricsQueryStream` (null: no series asked). */
export function runMetricsStream(ctx: Context, runId: string, query: RunMetricsQuery): {
  head: Record<string, unknown>;
  series: AsyncGenerator<Series> | null;
} {
  const keys = listMetricKeys(ctx, runId);
  if (!query.keys?.length) return { head: keys, series: null };
  const parsed = metricsQuery.safeParse({
    runs: [runId],
    keys: query.keys,
    max_points: query.max_points,
  });
  if (!parsed.success) throw validationError("query", parsed.error);
  const { head, series } = metricsQueryStream(ctx, parsed.data);
  return { head: { ...keys, ...head }, series };
}

/** `GET /api/runs/{id}/metrics` as a value (NotFoundError for an unknown run). */
export async function getRunMetrics(
  ctx: Context,
  runId: string,
  query: RunMetricsQuery,
): Promise<RunMetrics> {
  const { head, series } = runMetricsStream(ctx, runId, query);
  if (!series) return head as RunMetrics;
  const all: Series[] = [];
  for await (const s of series) all.push(s);
  return { ...head, series: all } as RunMetrics;
}

/**
 * `GET /api/runs/{id}/metrics/points`: one page of a whole series in step order, for exports;
 * `next_cursor` names the next page (null on the last).
 */
export function readPointsPage(ctx: Context, runId: string, query: PointsPageQuery) {
  requireRun(ctx, runId); // an unknown run is named before an unknown key
  return readPage(ctx, runId, query.key, query.cursor, query.limit ?? POINTS_PAGE_SIZE);
}
