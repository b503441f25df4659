/**
 * `set_primary_metric`: makes a metric key, with its direction, the primary metric of every
 * run, a project or an experiment; comparisons and recommendations rank by it.
 */
import { z } from "zod";
import { primaryMetricSet } from "../../protocol/rest/projects.ts";
import { METRIC_DIRECTIONS } from "../../protocol/vocabulary.ts";
import { setPrimaryMetric } from "../../server/projects/service.ts";
import { defineTool } from "../_tool.ts";

/** `set_primary_metric`: `PUT /api/metric-definitions/primary`. */
export const setPrimaryMetricTool = defineTool({
  name: "set_primary_metric",
  title: "Set the primary metric",
  description: "Makes a metric key the primary metric of a scope (global, a project, or an " +
    'experiment as "<project>/<experiment>"), with its direction: comparisons and checkpoint ' +
    "recommendations rank by it. Needs a write token.",
  kind: "control",
  annotations: { idempotentHint: true },
  input: primaryMetricSet,
  output: z.looseObject({
    scope: z.string(),
    scope_id: z.string(),
    key: z.string(),
    direction: z.enum(METRIC_DIRECTIONS),
    primary: z.boolean(),
  }),
  run(ctx, args) {
    const d = setPrimaryMetric(ctx, args);
    const where = d.scope === "global" ? "every run" : `${d.scope} ${d.scope_id}`;
    return {
      data: { ...d },
      summary: `The primary metric of ${where} is now ${d.key} (${
        d.direction === "min" ? "lower" : "higher"
      } is better).`,
    };
  },
});
