import type { MetricsQuery } from "../../protocol/rest.ts";
import { encodeMetricValue } from "../../protocol/objects.ts";
import { metricBlocks, metrics as metricsDb, runs as runsDb } from "../db/mod.ts";
import type { Context } from "../context.ts";
import { lttb } from "./lttb.ts";

/** One series in columns, as `POST /api/runs/metrics:query` returns it. */
export interface Series {
  run_id: string;
  key: string;
  steps: number[];
  values: (number | string)[];
  wall_times: number[];
  min?: (number | string)[];
  max?: (number | string)[];
  total_points: number;
}

/**
 * Many runs and keys in one call; a run or key that does not exist is listed in `missing`
 * instead of failing the call. With `max_points`, each series is downsampled with LTTB and
 * carries each bucket's extremes in `min`/`max`.
 */
export function queryMetrics(ctx: Context, q: MetricsQuery) {
  const series: Series[] = [];
  const missing: { run_id: string; key: string; reason: string }[] = [];
  const x = q.x ?? "step";
  for (const runId of q.runs) {
    if (!runsDb.getRun(ctx.db, runId)) {
      for (const key of q.keys) missing.push({ run_id: runId, key, reason: "no such run" });
      continue;
    }
    for (const key of q.keys) {
      if (!metricsDb.getKeySummary(ctx.db, runId, key)) {
        missing.push({ run_id: runId, key, reason: "no such key in this run" });
        continue;
      }
      const range = q.range
        ? {
          column: x === "wall" ? "wall_time" as const : "step" as const,
          from: q.range[0],
          to: q.range[1],
        }
        : undefined;
      series.push(shape(runId, key, readColumns(ctx, runId, key, range), q.max_points, x));
    }
  }
  return { series, missing };
}

interface Columns {
  steps: ArrayLike<number>;
  values: ArrayLike<number>;
  wall_times: ArrayLike<number>;
  length: number;
}

/** A series' columns, from the in-memory cache when the context has one, else the store. */
function readColumns(
  ctx: Context,
  runId: string,
  key: string,
  range: { column: "step" | "wall_time"; from: number; to: number } | undefined,
): Columns {
  if (!ctx.series) {
    const s = metricsDb.readSeries(ctx.db, runId, key, range);
    return { ...s, length: s.steps.length };
  }
  // Long series come mostly from sealed blocks (see BlockSealer), the newest points from rows.
  const c = ctx.series.get(runId, key, () => metricBlocks.readSeriesColumns(ctx.db, runId, key));
  const all = {
    steps: c.steps.subarray(0, c.length),
    values: c.values.subarray(0, c.length),
    wall_times: c.wallTimes.subarray(0, c.length),
    length: c.length,
  };
  if (!range) return all;
  const by = range.column === "step" ? c.steps : c.wallTimes;
  const keep: number[] = [];
  for (let i = 0; i < c.length; i++) if (by[i] >= range.from && by[i] <= range.to) keep.push(i);
  return {
    steps: keep.map((i) => c.steps[i]),
    values: keep.map((i) => c.values[i]),
    wall_times: keep.map((i) => c.wallTimes[i]),
    length: keep.length,
  };
}

function shape(
  runId: string,
  key: string,
  s: Columns,
  maxPoints: number | undefined,
  x: "step" | "wall",
): Series {
  const total = s.length;
  if (!maxPoints || total <= maxPoints) {
    return {
      run_id: runId,
      key,
      steps: Array.from(s.steps),
      values: Array.from(s.values, encodeMetricValue),
      wall_times: Array.from(s.wall_times),
      total_points: total,
    };
  }
  const xs = x === "wall" ? s.wall_times : s.steps;
  const odd: number[] = [];
  for (let i = 0; i < total; i++) if (!Number.isFinite(s.values[i])) odd.push(i);
  if (odd.length === 0) {
    // The common case: every value finite, downsampled straight from the columns.
    const d = lttb(xs, s.values, maxPoints);
    return {
      run_id: runId,
      key,
      steps: d.indices.map((i) => s.steps[i]),
      values: d.indices.map((i) => encodeMetricValue(s.values[i])),
      wall_times: d.indices.map((i) => s.wall_times[i]),
      min: d.min.map(encodeMetricValue),
      max: d.max.map(encodeMetricValue),
      total_points: total,
    };
  }
  // LTTB needs finite values; NaN/Inf points are kept apart and merged back, capped so the
  // answer never exceeds max_points.
  const oddSet = new Set(odd);
  const finite: number[] = [];
  for (let i = 0; i < total; i++) if (!oddSet.has(i)) finite.push(i);
  const keepOdd = odd.slice(0, Math.floor(maxPoints / 10));
  const fx = finite.map((i) => xs[i]);
  const fy = finite.map((i) => s.values[i]);
  const d = lttb(fx, fy, maxPoints - keepOdd.length);
  const picked = d.indices.map((j, n) => ({ i: finite[j], min: d.min[n], max: d.max[n] }));
  for (const i of keepOdd) picked.push({ i, min: s.values[i], max: s.values[i] });
  picked.sort((a, b) => a.i - b.i);
  return {
    run_id: runId,
    key,
    steps: picked.map((p) => s.steps[p.i]),
    values: picked.map((p) => encodeMetricValue(s.values[p.i])),
    wall_times: picked.map((p) => s.wall_times[p.i]),
    min: picked.map((p) => encodeMetricValue(p.min)),
    max: picked.map((p) => encodeMetricValue(p.max)),
    total_points: total,
  };
}
