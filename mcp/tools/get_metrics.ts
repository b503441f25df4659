/**
 * `get_metrics`: metric series of one or more runs as columns, downsampled to `TOOL_MAX_POINTS`
 * a series unless asked otherwise; without keys, one run's metric keys.
 */
import { z } from "zod";
import { metricsQuery, metricsQueryFields } from "../../protocol/rest/metrics.ts";
import { validationError } from "../../server/errors.ts";
import { getRunMetrics, queryMetrics, type Series } from "../../server/metrics/service.ts";
import { defineTool } from "../_tool.ts";
import { num } from "./_format.ts";

/** Points per series a tool answer holds unless `max_points` asks for more. */
export const TOOL_MAX_POINTS = 200;

function seriesText(s: Series): string {
  if (!s.steps.length) return `${s.key} of ${s.run_id}: no points`;
  const last = s.values[s.values.length - 1];
  const finite = s.values.filter((v): v is number => typeof v === "number");
  const range = finite.length
    ? `, min ${num(Math.min(...finite))}, max ${num(Math.max(...finite))}`
    : "";
  const shown = s.downsampled
    ? `${s.steps.length} of ${s.total_points} points`
    : `${s.steps.length} points`;
  return `${s.key} of ${s.run_id}: ${shown}, steps ${s.steps[0]}–${s.steps[s.steps.length - 1]}, ` +
    `last ${num(last)}${range}`;
}

/** `get_metrics`: `POST /api/runs/metrics:query` (with keys) or `GET /api/runs/{id}/metrics`. */
export const getMetricsTool = defineTool({
  name: "get_metrics",
  title: "Metric series",
  description: "Metric series of one or more runs as columns (steps, values, wall_times), " +
    `downsampled to ${TOOL_MAX_POINTS} points a series unless max_points says otherwise; a ` +
    "downsampled series keeps each bucket's min and max. NaN/Infinity come as strings. Without " +
    "keys (one run): the run's metric keys with their last value and point count.",
  kind: "observe",
  input: metricsQueryFields.extend({
    keys: metricsQueryFields.shape.keys.optional().describe(
      'Metric keys, e.g. ["train/loss", "eval/accuracy"]; leave out (with one run) to list ' +
        "the run's keys",
    ),
  }),
  output: z.looseObject({
    series: z.array(z.looseObject({
      run_id: z.string(),
      key: z.string(),
      steps: z.array(z.number()),
      values: z.array(z.union([z.number(), z.string()])),
      downsampled: z.boolean(),
    })).optional().describe("The series asked for"),
    missing: z.array(z.looseObject({ run_id: z.string(), key: z.string(), reason: z.string() }))
      .optional().describe("Runs and keys asked for that have no points"),
    keys: z.array(z.looseObject({ key: z.string() })).optional().describe(
      "Without keys: the run's metric keys",
    ),
  }),
  async run(ctx, args) {
    if (!args.keys) {
      if (args.runs.length !== 1) {
        throw validationError(
          "get_metrics arguments",
          new z.ZodError([{
            code: "custom",
            path: ["keys"],
            message: "is needed with more than one run (leave it out only to list one run's keys)",
            input: undefined,
          }]),
        );
      }
      const listed = await getRunMetrics(ctx, args.runs[0], {});
      const keys = listed.keys.filter((k) => !k.key.startsWith("sys/")).map((k) => k.key);
      return {
        data: { ...listed },
        summary: `Run ${args.runs[0]} has ${listed.keys.length} metric key(s)` +
          (keys.length ? `, besides system ones: ${keys.join(", ")}.` : ".") +
          " Call get_metrics with keys to get their series.",
      };
    }
    const parsed = metricsQuery.safeParse({
      ...args,
      max_points: args.max_points ?? TOOL_MAX_POINTS,
    });
    if (!parsed.success) throw validationError("get_metrics arguments", parsed.error);
    const answer = await queryMetrics(ctx, parsed.data);
    const lines = answer.series.map(seriesText);
    const missing = answer.missing.map((m) => `${m.key} of ${m.run_id} (${m.reason})`);
    const more = answer.series.some((s) => s.downsampled)
      ? ` Downsampled to ${answer.max_points} points a series: pass a larger max_points, or a ` +
        "range [from, to] of steps, for more detail."
      : "";
    return {
      data: { ...answer },
      summary: (lines.length ? `${lines.join("; ")}.` : "No series.") +
        (missing.length ? ` Missing: ${missing.join("; ")}.` : "") + more,
    };
  },
});
