/** One page of a whole series in step order, for exports, with the cursor of the next page. */
import { encodeMetricValue } from "../../protocol/metric_value.ts";
import { metricBlocks, metrics as metricsDb } from "../db/mod.ts";
import type { Context } from "../context.ts";
import { notFound } from "../errors.ts";

/** Points per page of `GET /api/runs/{id}/metrics/points` unless `limit` says otherwise. */
export const POINTS_PAGE_SIZE = 10_000;

/**
 * One page of a whole series, every point in step order, for exports: a page ends after
 * `limit` points and names the cursor of the next (`null` on the last page).
 */
export function readPointsPage(
  ctx: Context,
  runId: string,
  key: string,
  cursor: string | undefined,
  limit: number,
) {
  const summary = metricsDb.getKeySummary(ctx.db, runId, key);
  if (!summary) throw notFound("Metric key", key);
  const after = cursor === undefined ? -1 : Number(cursor);
  const c = metricBlocks.readSeriesChunk(ctx.db, runId, key, after, Infinity, limit);
  const steps = Array.from(c.steps.subarray(0, c.length));
  return {
    run_id: runId,
    key,
    steps,
    values: Array.from(c.values.subarray(0, c.length), encodeMetricValue),
    wall_times: Array.from(c.wallTimes.subarray(0, c.length)),
    // A page may hold fewer than `limit` points (whole sealed blocks); the cursor says more.
    next_cursor: c.length > 0 && steps[c.length - 1] < summary.last_step
      ? String(steps[c.length - 1])
      : null,
  };
}
