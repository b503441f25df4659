/**
 * Events as the API lists and streams them: filters by run, job, node, type and minimum
 * severity, the same for a stored page and for live events off the bus.
 */
import type { EventRecord, Page } from "../../protocol/objects.ts";
import type { EventFilterQuery, EventListQuery } from "../../protocol/rest/events.ts";
import { EVENT_TYPES } from "../../protocol/event_types.ts";
import { atLeast } from "../../protocol/severity.ts";
import { events as eventsDb } from "../db/mod.ts";
import type { EventFilter } from "../db/events.ts";
import type { Context } from "../context.ts";
import { topics } from "../bus/bus.ts";
import type { Feed } from "../bus/feed.ts";
import { invalidField, quoted } from "../errors.ts";

/** Events a list shows unless `limit` says otherwise. */
export const EVENT_PAGE_SIZE = 100;

/** The filter of a list or stream query, its type checked (see `checkedFilter`). */
export function eventFilter(ctx: Context, query: EventFilterQuery | EventListQuery): EventFilter {
  const filter: EventFilter = {
    run_id: query.run_id,
    job_id: query.job_id,
    node_id: query.node_id,
    type: query.type,
    severity: query.severity,
  };
  return checkedFilter(ctx, filter);
}

// A type nothing raises would filter every event away in silence: refuse it, listing the
// types there are. One already stored (from an agent newer than this server) is accepted.
function checkedFilter(ctx: Context, filter: EventFilter): EventFilter {
  const type = filter.type;
  if (
    type === undefined || (EVENT_TYPES as readonly string[]).includes(type) ||
    eventsDb.hasEventType(ctx.db, type)
  ) {
    return filter;
  }
  throw invalidField(
    "query",
    "type",
    `unknown event type ${quoted(type)}; the types are ${EVENT_TYPES.join(", ")}`,
  );
}

/** `GET /api/events`: newest first, filtered; `next_cursor` pages on to older events. */
export function listEvents(ctx: Context, query: EventListQuery): Page<EventRecord> {
  return eventsDb.listEvents(
    ctx.db,
    eventFilter(ctx, query),
    query.limit ?? EVENT_PAGE_SIZE,
    query.cursor ? Number(query.cursor) : undefined,
  );
}

/**
 * Whether an event passes a filter: each id and the type equal when set, the severity at
 * least the filter's (an unknown severity ranks as the most severe). The same answer as the
 * store's filter, for live events.
 */
export function eventMatches(filter: EventFilter, e: EventRecord): boolean {
  return (!filter.run_id || e.run_id === filter.run_id) &&
    (!filter.job_id || e.job_id === filter.job_id) &&
    (!filter.node_id || e.node_id === filter.node_id) &&
    (!filter.type || e.type === filter.type) &&
    (!filter.severity || atLeast(e.severity, filter.severity));
}

/** Stored events after `afterId` that pass the filter, oldest first (a stream's backlog). */
export function eventsAfter(
  ctx: Context,
  filter: EventFilter,
  afterId: number,
  limit: number,
): EventRecord[] {
  return eventsDb.eventsAfter(ctx.db, filter, afterId, limit);
}

/** The newest event id (0 when there is none): where a stream with no resume id starts. */
export function lastEventId(ctx: Context): number {
  return eventsDb.lastEventId(ctx.db);
}

/** `GET /api/events/stream`: stored events after an id, then live ones, filtered alike. */
export function eventsFeed(ctx: Context, query: EventFilterQuery): Feed {
  const filter = eventFilter(ctx, query);
  return {
    backlog: (after, limit) =>
      eventsAfter(ctx, filter, after, limit).map((e) => ({ id: e.id, data: e })),
    subscribe: (push) =>
      ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
        if (eventMatches(filter, e)) push([{ id: e.id, data: e }]);
      }),
    lastId: () => lastEventId(ctx),
  };
}
