/**
 * Each metric of a run as `gpuctl run show` and `GET /api/runs/{id}/metric-summary` list it:
 * latest, best (by the key's direction: its metric definition, else its name) and the trend
 * of its recent points, judged by the same rule the diagnosis uses.
 */
import type { MetricRow } from "../../protocol/objects.ts";
import type { Context } from "../context.ts";
import { listMetricDefinitions } from "../db/projects.ts";
import { keyDirection } from "../metrics/primary_metric.ts";
import { queryMetrics } from "../metrics/service.ts";
import { listMetricKeys, requireRun } from "../runs/service.ts";
import { metricTrend } from "./trend.ts";

/** Points per series that the trends are judged on. */
const TREND_POINTS = 200;
/** Trained metrics (not `sys/`) whose trend is judged; the rest are listed without one. */
const TREND_KEYS = 100;

/** The run's metrics, trained ones first by name, then `sys/` ones; NotFoundError for no run. */
export async function runMetricRows(ctx: Context, runId: string): Promise<MetricRow[]> {
  const run = requireRun(ctx, runId);
  const definitions = listMetricDefinitions(ctx.db);
  const ordered = [...listMetricKeys(ctx, runId).keys].sort((a, b) =>
    Number(a.key.startsWith("sys/")) - Number(b.key.startsWith("sys/")) ||
    a.key.localeCompare(b.key)
  );
  const trained = ordered.filter((k) => !k.key.startsWith("sys/")).slice(0, TREND_KEYS);
  const series = new Map<string, { steps: number[]; values: number[]; wall_times: number[] }>();
  if (trained.length) {
    const answer = await queryMetrics(ctx, {
      runs: [runId],
      keys: trained.map((k) => k.key),
      max_points: TREND_POINTS,
    });
    for (const s of answer.series) series.set(s.key, { ...s, values: s.values.map(Number) });
  }
  return ordered.map((k) => {
    const direction = keyDirection(run, definitions, k.key);
    const best = direction === "min" ? k.min_value : direction === "max" ? k.max_value : null;
    const bestStep = direction === "min" ? k.min_step : direction === "max" ? k.max_step : null;
    const s = series.get(k.key);
    const trend = s && direction
      ? metricTrend(
        { key: k.key, ...s },
        direction,
        best === null ? null : { value: best, step: bestStep },
      ).verdict
      : "unknown";
    return {
      key: k.key,
      points: k.points,
      latest: k.last_value,
      latest_step: k.last_step,
      direction,
      best,
      best_step: bestStep,
      trend,
    };
  });
}
