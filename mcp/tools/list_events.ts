/** `list_events`: events newest first, filtered by run, job, node, type or minimum severity. */
import { ANOMALY_EVENT_TYPES } from "../../protocol/event_types.ts";
import { eventListQuery } from "../../protocol/rest/events.ts";
import { listEvents } from "../../server/events/service.ts";
import { defineTool, moreHint, pageFields, TOOL_PAGE_SIZE } from "../_tool.ts";
import { eventShape, pageOf } from "../_shapes.ts";

/** `list_events`: `GET /api/events`. */
export const listEventsTool = defineTool({
  name: "list_events",
  title: "Events",
  description: "Events, newest first: lifecycle (JOB_QUEUED, RUN_STARTED, RUN_FAILED, " +
    `CHECKPOINT_CREATED, EVALUATION_COMPLETED, NODE_OFFLINE, …) and anomalies (${
      ANOMALY_EVENT_TYPES.join(", ")
    }). Filter by run, ` +
    "job, node, type or minimum severity. Paginated: pass next_cursor as cursor.",
  kind: "observe",
  input: eventListQuery.extend(pageFields),
  output: pageOf(eventShape, "The events, newest first"),
  run(ctx, args) {
    const query = { ...args, limit: args.limit ?? TOOL_PAGE_SIZE };
    const page = listEvents(ctx, query);
    const shown = page.items.slice(0, 10).map((e) =>
      `#${e.id} ${e.type} (${e.severity}): ${e.message}`
    );
    return {
      data: { ...page },
      summary: `${page.items.length} event(s)${shown.length ? `: ${shown.join("; ")}` : ""}` +
        `${page.items.length > shown.length ? "; …" : ""}. ` +
        moreHint("list_events", page.next_cursor, query),
    };
  },
});
