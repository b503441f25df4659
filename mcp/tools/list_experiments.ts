/**
 * `list_experiments`: experiments with their runs by status and the best value of the primary
 * metric any run reached.
 */
import { experimentsQuery } from "../../protocol/rest/projects.ts";
import { listExperiments } from "../../server/projects/service.ts";
import { defineTool } from "../_tool.ts";
import { pageOf } from "../_shapes.ts";
import { z } from "zod";
import { num } from "./_format.ts";

/** `list_experiments`: `GET /api/experiments`. */
export const listExperimentsTool = defineTool({
  name: "list_experiments",
  title: "Experiments",
  description: "Experiments (of one project, or all): runs by status, the primary metric and " +
    "the best value any run reached (with that run and step), and the last activity.",
  kind: "observe",
  input: experimentsQuery,
  output: pageOf(
    z.looseObject({
      project: z.string(),
      name: z.string(),
      runs: z.looseObject({ total: z.number() }),
      best_primary: z.looseObject({ key: z.string() }).nullable(),
    }),
    "The experiments",
  ),
  run(ctx, args) {
    const page = listExperiments(ctx, args);
    const shown = page.items.map((e) => {
      const best = e.best_primary?.value != null
        ? `, best ${e.best_primary.key} ${num(e.best_primary.value)} (run ${e.best_primary.run_id})`
        : "";
      return `${e.project}/${e.name}: ${e.runs.total} run(s)${best}`;
    });
    return {
      data: { ...page },
      summary: page.items.length
        ? `${page.items.length} experiment(s): ${shown.join("; ")}.`
        : "No experiments yet.",
    };
  },
});
