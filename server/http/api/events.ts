/** `GET /api/events` (newest first, paginated) and `GET /api/events/stream` (SSE with resume). */
import { eventListQuery, eventStreamQuery } from "../../../protocol/rest/events.ts";
import { eventsFeed, listEvents } from "../../events/service.ts";
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
      const feed = eventsFeed(ctx, readQuery(c.req.url, eventStreamQuery));
      return sseResponse(c.req.raw, feed, streamOptions(c, ctx, feed.lastId()));
    },
  },
];
