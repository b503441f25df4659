/**
 * `POST /api/runs/metrics:query`: a query planned with cheap look-ups (what is missing is
 * listed), then its series read in chunks, one at a time, downsampled when long.
 */
import { DEFAULT_MAX_POINTS, type MetricsQuery } from "../../protocol/rest/metrics.ts";
import { encodeMetricValue } from "../../protocol/metric_value.ts";
import type { Series } from "../../protocol/objects.ts";

export type { Series };
import type { SeriesColumns } from "../db/metric_blocks.ts";
import { metrics as metricsDb, runs as runsDb } from "../db/mod.ts";
import type { Context } from "../context.ts";
import { lttb } from "./lttb.ts";
import { type SeriesRange, withChartSeries } from "./read_series.ts";

/** One series in columns, as `POST /api/runs/metrics:query` returns it. */

/** A run and key a query named that do not exist, and why. */
export interface MissingSeries {
  run_id: string;
  key: string;
  reason: string;
}

/** What a query will read: the series that exist (cheap look-ups only), and the rest. */
export interface MetricsPlan {
  series: { run_id: string; key: string }[];
  missing: MissingSeries[];
  maxPoints: number;
  x: "step" | "wall";
  range: SeriesRange | undefined;
}

/**
 * Resolves a query without reading any point: a run or key that does not exist is listed in
 * `missing` instead of failing the call. `max_points` defaults to DEFAULT_MAX_POINTS.
 */
export function planMetricsQuery(ctx: Context, q: MetricsQuery): MetricsPlan {
  const series: MetricsPlan["series"] = [];
  const missing: MissingSeries[] = [];
  const x = q.x ?? "step";
  for (const runId of q.runs) {
    if (!runsDb.getRun(ctx.db, runId)) {
      for (const key of q.keys) missing.push({ run_id: runId, key, reason: "no such run" });
      continue;
    }
    for (const key of q.keys) {
      if (metricsDb.getKeySummary(ctx.db, runId, key)) series.push({ run_id: runId, key });
      else missing.push({ run_id: runId, key, reason: "no such key in this run" });
    }
  }
  const range = q.range
    ? {
      column: x === "wall" ? "wall_time" as const : "step" as const,
      from: q.range[0],
      to: q.range[1],
    }
    : undefined;
  return { series, missing, maxPoints: q.max_points ?? DEFAULT_MAX_POINTS, x, range };
}

/**
 * The planned series one at a time, each read in chunks that let other requests and the
 * agents' heartbeats run in between, and downsampled with LTTB (with each bucket's
 * extremes in `min`/`max`) when longer than the plan's `maxPoints`. A long series not in
 * memory is downsampled from its block summaries (see `withChartSeries`).
 */
export async function* readPlannedSeries(ctx: Context, plan: MetricsPlan): AsyncGenerator<Series> {
  for (const { run_id, key } of plan.series) {
    yield await withChartSeries(
      ctx,
      run_id,
      key,
      plan.range,
      plan.maxPoints,
      (columns, total) => shape(run_id, key, columns, plan.maxPoints, plan.x, total),
    );
  }
}

/**
 * The answer for one series from the columns `s`: all of them, or downsampled to
 * `maxPoints`. `total` is the number of points they stand for (more than `s.length` when
 * `s` is a summary, which is then always downsampled).
 */
export function shape(
  runId: string,
  key: string,
  s: SeriesColumns,
  maxPoints: number,
  x: "step" | "wall",
  total = s.length,
): Series {
  if (s.length <= maxPoints && total === s.length) {
    return {
      run_id: runId,
      key,
      steps: Array.from(s.steps),
      values: Array.from(s.values, encodeMetricValue),
      wall_times: Array.from(s.wallTimes),
      total_points: total,
      downsampled: false,
    };
  }
  const n = s.length;
  const xs = x === "wall" ? s.wallTimes : s.steps;
  const odd: number[] = [];
  for (let i = 0; i < n; i++) if (!Number.isFinite(s.values[i])) odd.push(i);
  if (odd.length === 0) {
    // The common case: every value finite, downsampled straight from the columns.
    const d = lttb(xs, s.values, maxPoints);
    return {
      run_id: runId,
      key,
      steps: d.indices.map((i) => s.steps[i]),
      values: d.indices.map((i) => encodeMetricValue(s.values[i])),
      wall_times: d.indices.map((i) => s.wallTimes[i]),
      min: d.min.map(encodeMetricValue),
      max: d.max.map(encodeMetricValue),
      total_points: total,
      downsampled: true,
    };
  }
  // LTTB needs finite values; NaN/Inf points are kept apart and merged back, capped so the
  // answer never exceeds max_points.
  const finite = new Uint32Array(n - odd.length);
  const fx = new Float64Array(finite.length);
  const fy = new Float64Array(finite.length);
  for (let i = 0, j = 0, o = 0; i < n; i++) {
    if (o < odd.length && odd[o] === i) {
      o++;
      continue;
    }
    finite[j] = i;
    fx[j] = xs[i];
    fy[j] = s.values[i];
    j++;
  }
  const keepOdd = odd.slice(0, Math.floor(maxPoints / 10));
  const d = lttb(fx, fy, maxPoints - keepOdd.length);
  const picked = d.indices.map((j, n) => ({ i: finite[j], min: d.min[n], max: d.max[n] }));
  for (const i of keepOdd) picked.push({ i, min: s.values[i], max: s.values[i] });
  picked.sort((a, b) => a.i - b.i);
  return {
    run_id: runId,
    key,
    steps: picked.map((p) => s.steps[p.i]),
    values: picked.map((p) => encodeMetricValue(s.values[p.i])),
    wall_times: picked.map((p) => s.wallTimes[p.i]),
    min: picked.map((p) => encodeMetricValue(p.min)),
    max: picked.map((p) => encodeMetricValue(p.max)),
    total_points: total,
    downsampled: true,
  };
}
