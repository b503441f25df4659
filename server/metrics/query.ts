import type { MetricsQuery } from "../../protocol/rest.ts";
import { encodeMetricValue } from "../../protocol/objects.ts";
import { metrics as metricsDb, runs as runsDb } from "../db/mod.ts";
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
      series.push(
        shape(runId, key, metricsDb.readSeries(ctx.db, runId, key, range), q.max_points, x),
      );
    }
  }
  return { series, missing };
}

function shape(
  runId: string,
  key: string,
  s: { steps: number[]; values: number[]; wall_times: number[] },
  maxPoints: number | undefined,
  x: "step" | "wall",
): Series {
  const total = s.steps.length;
  if (!maxPoints || total <= maxPoints) {
    return {
      run_id: runId,
      key,
      steps: s.steps,
      values: s.values.map(encodeMetricValue),
      wall_times: s.wall_times,
      total_points: total,
    };
  }
  // LTTB needs finite values; NaN/Inf points are kept apart and merged back, capped so the
  // answer never exceeds max_points.
  const finite: number[] = [];
  const odd: number[] = [];
  for (let i = 0; i < total; i++) (Number.isFinite(s.values[i]) ? finite : odd).push(i);
  const keepOdd = odd.slice(0, Math.floor(maxPoints / 10));
  const xs = x === "wall" ? s.wall_times : s.steps;
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
