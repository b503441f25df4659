import { z } from "zod";
import { SEVERITIES } from "../../../protocol/rest.ts";
import type { EventRecord } from "../../../protocol/objects.ts";
import { events as eventsDb } from "../../db/mod.ts";
import type { EventFilter } from "../../db/events.ts";
import { topics } from "../../bus/bus.ts";
import { readQuery } from "../body.ts";
import type { RouteDef } from "../route.ts";
import { sseResponse, streamOptions } from "../sse.ts";
import { listQuery } from "./_params.ts";
import { EVENT_TYPES } from "../../../protocol/event_types.ts";
import type { Context } from "../../context.ts";
import { HttpError } from "../errors.ts";
import { quoted } from "../../errors.ts";

const filterShape = {
  run_id: z.string().max(200).optional(),
  job_id: z.string().max(200).optional(),
  node_id: z.string().max(200).optional(),
  type: z.string().max(200).optional(),
  severity: z.enum(SEVERITIES).optional(),
};

// A type nothing raises would filter every event away in silence: refuse it, listing the
// types there are. One already stored (from an agent newer than this server) is accepted.
function knownType<F extends { type?: string }>(ctx: Context, filter: F): F {
  const type = filter.type;
  if (
    type === undefined || (EVENT_TYPES as readonly string[]).includes(type) ||
    eventsDb.hasEventType(ctx.db, type)
  ) {
    return filter;
  }
  const problem = `unknown event type ${quoted(type)}; the types are ${EVENT_TYPES.join(", ")}`;
  throw new HttpError(400, "ValidationError", `Invalid query: type: ${problem}`, {
    details: [{ field: "type", problem }],
  });
}

const SEVERITY_RANK = { info: 0, warning: 1, critical: 2 };

function matches(f: EventFilter, e: EventRecord): boolean {
  return (!f.run_id || e.run_id === f.run_id) && (!f.job_id || e.job_id === f.job_id) &&
    (!f.node_id || e.node_id === f.node_id) && (!f.type || e.type === f.type) &&
    (!f.severity || SEVERITY_RANK[e.severity] >= SEVERITY_RANK[f.severity]);
}

export const eventRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/events",
    scope: "read",
    handler: (c, ctx) => {
      const { limit, cursor, ...filter } = knownType(ctx, listQuery(c, filterShape));
      return c.json(
        eventsDb.listEvents(ctx.db, filter, limit ?? 100, cursor ? Number(cursor) : undefined),
      );
    },
  },
  {
    method: "GET",
    path: "/api/events/stream",
    scope: "read",
    handler: (c, ctx) => {
      const filter: EventFilter = knownType(
        ctx,
        readQuery(c.req.url, z.object({ ...filterShape, after: z.string().optional() })),
      );
      return sseResponse(c.req.raw, {
        backlog: (after, limit) =>
          eventsDb.eventsAfter(ctx.db, filter, after, limit).map((e) => ({ id: e.id, data: e })),
        subscribe: (push) =>
          ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
            if (matches(filter, e)) push([{ id: e.id, data: e }]);
          }),
      }, streamOptions(c, ctx, eventsDb.lastEventId(ctx.db)));
    },
  },
];
