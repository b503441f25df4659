/** `list_jobs`: jobs newest first, filtered by status, project, experiment or node; paginated. */
import { jobListQuery } from "../../protocol/rest/jobs.ts";
import { listJobs } from "../../server/jobs/service.ts";
import { defineTool, moreHint, pageFields, TOOL_PAGE_SIZE } from "../_tool.ts";
import { jobShape, pageOf } from "../_shapes.ts";

/** `list_jobs`: `GET /api/jobs`. */
export const listJobsTool = defineTool({
  name: "list_jobs",
  title: "Jobs",
  description: "Jobs, newest first, filtered by status, project, experiment or node; each with " +
    "its status, attempt, failure class and current run_id. Paginated: pass next_cursor as cursor.",
  kind: "observe",
  input: jobListQuery.extend(pageFields),
  output: pageOf(jobShape, "The jobs, newest first"),
  run(ctx, args) {
    const query = { ...args, limit: args.limit ?? TOOL_PAGE_SIZE };
    const page = listJobs(ctx, query);
    const shown = page.items.map((j) => `${j.name} (${j.id}) ${j.status}`).join("; ");
    return {
      data: { ...page },
      summary: `${page.items.length} job(s)${shown ? `: ${shown}` : ""}. ` +
        moreHint("list_jobs", page.next_cursor, query),
    };
  },
});
