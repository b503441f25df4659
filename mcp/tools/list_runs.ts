/**
 * `list_runs`: runs newest first (job attempts, SDK and imported runs) with status, step and
 * primary metric; filtered and paginated.
 */
import { runListQuery } from "../../protocol/rest/runs.ts";
import { listRuns } from "../../server/runs/service.ts";
import { defineTool, moreHint, pageFields, TOOL_PAGE_SIZE } from "../_tool.ts";
import { pageOf, runShape } from "../_shapes.ts";
import { metricText } from "./_format.ts";

/** `list_runs`: `GET /api/runs`. */
export const listRunsTool = defineTool({
  name: "list_runs",
  title: "Runs",
  description: "Runs (each attempt of a job is a run; SDK and imported runs too), newest first, " +
    "with status, step and primary metric (latest and best). Filter by project, experiment, " +
    "status, job_id, source, or q (name/id search). Paginated: pass next_cursor as cursor.",
  kind: "observe",
  input: runListQuery.extend(pageFields),
  output: pageOf(runShape, "The runs, newest first"),
  run(ctx, args) {
    const query = { ...args, limit: args.limit ?? TOOL_PAGE_SIZE };
    const page = listRuns(ctx, query);
    const shown = page.items.map((r) =>
      `${r.name} (${r.id}) ${r.status}${metricText(r.primary_metric)}`
    ).join("; ");
    return {
      data: { ...page },
      summary: `${page.items.length} run(s)${shown ? `: ${shown}` : ""}. ` +
        moreHint("list_runs", page.next_cursor, query),
    };
  },
});
