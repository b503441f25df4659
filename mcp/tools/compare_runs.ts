/**
 * `compare_runs`: runs side by side on one metric (the primary one unless named) — best and
 * latest values, rank, and the config keys whose values differ.
 */
import { z } from "zod";
import { comparedRunIds } from "../../protocol/rest/runs.ts";
import { METRIC_DIRECTIONS } from "../../protocol/vocabulary.ts";
import { compareRunsByIds } from "../../server/semantic/mod.ts";
import { defineTool } from "../_tool.ts";
import { semanticShape } from "../_shapes.ts";
import { withNextActions } from "./_format.ts";

/** `compare_runs`: `GET /api/runs/compare`. */
export const compareRunsTool = defineTool({
  name: "compare_runs",
  title: "Compare runs",
  description: "Runs side by side on one metric (the primary metric unless named): best and " +
    "latest values, steps, duration, rank (1 is best) and the config keys whose values differ " +
    "(e.g. the learning rate); with next_actions for the best run.",
  kind: "semantic",
  input: z.object({
    runs: comparedRunIds.describe("The run ids to compare (2 to 50)"),
    metric: z.string().trim().min(1).max(200).optional().describe(
      'The metric key to rank by, e.g. "eval/loss" (default: the primary metric)',
    ),
  }),
  output: semanticShape({
    metric: z.looseObject({ key: z.string(), direction: z.enum(METRIC_DIRECTIONS) }).nullable(),
    ranking: z.array(z.string()).describe("Run ids, best first"),
    runs: z.array(z.looseObject({ run_id: z.string(), rank: z.number().nullable() })),
    config_diff: z.array(z.looseObject({ key: z.string() })),
  }),
  run(ctx, { runs, metric }) {
    const c = compareRunsByIds(ctx, runs, metric);
    return { data: { ...c }, summary: withNextActions(c.summary, c.next_actions) };
  },
});
