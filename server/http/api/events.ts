import { eventListQuery, eventStreamQuery } from "../../../protocol/rest.ts";
import type { EventRecord } from "../../../protocol/objects.ts";
import { topics } from "../../bus/bus.ts";
import {
  eventFilter,
  eventMatches,
  eventsAfter,
  lastEventId,
  listEvents,
} from "../../events/service.ts";
import { readQuery } from "../body.ts";
import type { RouteDef } from "../route.ts";
import { sseResponse, streamOptions } from "../sse.ts";

export const eventRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/events",
    scope: "read",
    handler: (c, ctx) => c.json(listEvents(ctx, readQuery(c.req.url, eventListQuery))),
  },
  {
    method: "GET",
    path: "/api/events/stream",
    scope: "read",
    handler: (c, ctx) => {
      const filter = eventFilter(ctx, readQuery(c.req.url, eventStreamQuery));
      return sseResponse(c.req.raw, {
        backlog: (after, limit) =>
          eventsAfter(ctx, filter, after, limit).map((e) => ({ id: e.id, data: e })),
        subscribe: (push) =>
          ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
            if (eventMatches(filter, e)) push([{ id: e.id, data: e }]);
          }),
      }, streamOptions(c, ctx, lastEventId(ctx)));
    },
  },
];
