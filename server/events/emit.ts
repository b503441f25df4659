import type { EventRecord } from "../../protocol/objects.ts";
import { events as eventsDb } from "../db/mod.ts";
import type { NewEvent } from "../db/events.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";

/** Stores an event and, once its transaction commits, publishes it on the bus. */
export function emitEvent(ctx: Context, e: Omit<NewEvent, "ts"> & { ts?: string }): EventRecord {
  const record = eventsDb.insertEvent(ctx.db, { ...e, ts: e.ts ?? ctx.now().toISOString() });
  ctx.db.afterCommit(() => ctx.bus.publish(topics.events, record));
  return record;
}
