/**
 * What the metric reads accept: `POST /api/runs/metrics:query`, a run's metrics and its pages
 * of points, and the live stream of several runs' points; with the limits on what one asks.
 */
import { z } from "zod";
import { MAX_QUERY_POINTS, MAX_QUERY_SERIES, MAX_STREAMED_RUNS } from "../limits.ts";
import { commaList, id, MAX_NAME_LENGTH } from "./fields.ts";

export { MAX_QUERY_POINTS, MAX_QUERY_SERIES };
/** Points per series when a query names no `max_points`: enough for a chart. */
export const DEFAULT_MAX_POINTS = 2000;
/** The largest `max_points`; longer exports page with `GET /api/runs/{id}/metrics/points`. */
export const MAX_SERIES_POINTS = 100_000;

/**
 * `POST /api/runs/metrics:query`. Duplicate runs and keys are removed; the work one query
 * can cause is bounded by MAX_QUERY_SERIES and MAX_QUERY_POINTS.
 */
export const metricsQueryFields = z.strictObject({
  runs: z.array(id).min(1).max(200).describe("Run ids"),
  keys: z.array(z.string().min(1).max(MAX_NAME_LENGTH)).min(1).max(200).describe(
    'Metric keys, e.g. ["train/loss", "eval/accuracy"]',
  ),
  max_points: z.number().int().min(3).max(MAX_SERIES_POINTS).optional().describe(
    "Points per series at most; longer series are downsampled (LTTB) keeping each bucket's " +
      "min and max",
  ),
  x: z.enum(["step", "wall"]).optional().describe(
    'What range is in: "step" (default) or "wall" (Unix s)',
  ),
  range: z.tuple([z.number(), z.number()]).optional().describe("[from, to] of x, inclusive"),
});
export const metricsQuery = metricsQueryFields.transform((q) => ({
  ...q,
  runs: [...new Set(q.runs)],
  keys: [...new Set(q.keys)],
}))
  .superRefine((q, ctx) => {
    const series = q.runs.length * q.keys.length;
    if (series > MAX_QUERY_SERIES) {
      ctx.addIssue({
        code: "custom",
        path: ["keys"],
        message: `${q.runs.length} runs × ${q.keys.length} keys = ${series} series ` +
          `(duplicates removed); at most ${MAX_QUERY_SERIES} per query`,
      });
    }
    const points = series * (q.max_points ?? DEFAULT_MAX_POINTS);
    if (series <= MAX_QUERY_SERIES && points > MAX_QUERY_POINTS) {
      ctx.addIssue({
        code: "custom",
        path: ["max_points"],
        message: `${series} series × ${q.max_points} points = ${points}; at most ` +
          `${MAX_QUERY_POINTS} per answer: ask fewer, or page a whole series with ` +
          "GET /api/runs/{id}/metrics/points",
      });
    }
    if (q.range && q.range[0] > q.range[1]) {
      ctx.addIssue({
        code: "custom",
        path: ["range"],
        message: `from ${q.range[0]} is after to ${q.range[1]}`,
      });
    }
  });
export type MetricsQuery = z.output<typeof metricsQuery>;

/** `GET /api/runs/{id}/metrics`: the run's keys; with `keys`, their series too. */
export const runMetricsQuery = z.object({
  keys: commaList.optional(),
  max_points: z.coerce.number().int().min(3).max(MAX_SERIES_POINTS).optional(),
});
export type RunMetricsQuery = z.infer<typeof runMetricsQuery>;

/** `GET /api/runs/{id}/metrics/points`: one page of a whole series. */
export const pointsPageQuery = z.object({
  key: z.string().min(1).max(MAX_NAME_LENGTH),
  cursor: z.string().regex(/^\d{1,16}$/, "must be the next_cursor of the previous page")
    .optional(),
  limit: z.coerce.number().int().min(1).max(MAX_SERIES_POINTS).optional(),
});
export type PointsPageQuery = z.infer<typeof pointsPageQuery>;

/** `GET /api/runs/metrics:stream?runs=a,b,c`: the live points of several runs in one stream. */
export const runsMetricsStreamQuery = z.object({
  runs: commaList.pipe(
    z.array(id).min(1, "must name at least 1 run (comma-separated)").max(
      MAX_STREAMED_RUNS,
      `names more than ${MAX_STREAMED_RUNS} runs`,
    ),
  ),
});
export type RunsMetricsStreamQuery = z.infer<typeof runsMetricsStreamQuery>;
