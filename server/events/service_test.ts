import { assert, assertEquals, assertThrows } from "../../tests/assert.ts";
import type { EventRecord } from "../../protocol/objects.ts";
import { ValidationError } from "../errors.ts";
import { testContext } from "../runs/_test_context.ts";
import { emitEvent } from "./emit.ts";
import { eventFilter, eventMatches, eventsAfter, listEvents } from "./service.ts";

function seeded() {
  const ctx = testContext();
  ctx.db.tx(() => {
    emitEvent(ctx, { type: "RUN_STARTED", severity: "info", run_id: "r-1", message: "a" });
    emitEvent(ctx, { type: "LOSS_SPIKE", severity: "warning", run_id: "r-1", message: "b" });
    emitEvent(ctx, { type: "NODE_OFFLINE", severity: "critical", node_id: "n-1", message: "c" });
    emitEvent(ctx, { type: "LOSS_NAN", severity: "critical", run_id: "r-2", message: "d" });
  });
  return ctx;
}

const messages = (events: { message: string }[]) => events.map((e) => e.message);

Deno.test("listEvents() lists newest first and filters by run, node, type and minimum severity", () => {
  const ctx = seeded();
  assertEquals(messages(listEvents(ctx, {}).items), ["d", "c", "b", "a"]);
  assertEquals(messages(listEvents(ctx, { run_id: "r-1" }).items), ["b", "a"]);
  assertEquals(messages(listEvents(ctx, { node_id: "n-1" }).items), ["c"]);
  assertEquals(messages(listEvents(ctx, { type: "LOSS_SPIKE" }).items), ["b"]);
  assertEquals(messages(listEvents(ctx, { severity: "warning" }).items), ["d", "c", "b"]);
  assertEquals(messages(listEvents(ctx, { severity: "critical", run_id: "r-2" }).items), ["d"]);
});

Deno.test("listEvents() pages to older events with next_cursor", () => {
  const ctx = seeded();
  const first = listEvents(ctx, { limit: 3 });
  assertEquals(messages(first.items), ["d", "c", "b"]);
  const second = listEvents(ctx, { limit: 3, cursor: first.next_cursor! });
  assertEquals(messages(second.items), ["a"]);
  assertEquals(second.next_cursor, null);
});

Deno.test("an event type nothing raises is refused, naming the known types", () => {
  const ctx = seeded();
  const err = assertThrows(
    () => listEvents(ctx, { type: "LOSS_NANN" }),
    'unknown event type "LOSS_NANN"',
  );
  assert(err instanceof ValidationError);
  assertEquals(err.details[0].field, "type");
});

Deno.test("eventMatches() gives the store's answer for every event and filter", () => {
  const ctx = seeded();
  const all = eventsAfter(ctx, {}, 0, 100);
  const filters = [
    {},
    { run_id: "r-1" },
    { severity: "warning" as const },
    { severity: "critical" as const, run_id: "r-1" },
    { type: "LOSS_NAN" },
    { node_id: "n-1", severity: "info" as const },
  ];
  for (const f of filters) {
    const filter = eventFilter(ctx, f);
    assertEquals(
      messages(all.filter((e) => eventMatches(filter, e))),
      messages(eventsAfter(ctx, filter, 0, 100)),
      JSON.stringify(f),
    );
  }
});

Deno.test("eventMatches() keeps an event of an unknown severity under any severity filter", () => {
  const e = { severity: "emergency", type: "X", run_id: null } as unknown as EventRecord;
  assertEquals(eventMatches({ severity: "critical" }, e), true);
});
