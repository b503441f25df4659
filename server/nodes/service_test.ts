import { assertEquals, assertThrows } from "../../tests/assert.ts";
import { nodes as nodesDb } from "../db/mod.ts";
import { NotFoundError } from "../errors.ts";
import { testContext } from "../runs/_test_context.ts";
import { getNode, listNodes } from "./service.ts";

Deno.test("listNodes() and getNode() answer what the agents reported; an unknown id is NotFound", () => {
  const ctx = testContext();
  assertEquals(listNodes(ctx), { items: [], next_cursor: null });
  nodesDb.upsertNode(ctx.db, {
    id: "gpu-1",
    hostname: "gpu-1.lan",
    status: "ONLINE",
    gpus: [{ index: 0, uuid: "GPU-0", name: "H100", memory_total_mb: 81920 }],
    cpu_count: 8,
    memory_mb: 64000,
    disk_free_mb: 1000,
    labels: {},
    agent_version: "0.1.0",
    cpu_slots: 2,
    avoid_foreign_gpus: false,
    fake_gpus: false,
    last_heartbeat_at: null,
  }, ctx.now().toISOString());
  assertEquals(listNodes(ctx).items.map((n) => n.id), ["gpu-1"]);
  assertEquals(getNode(ctx, "gpu-1").gpus[0].name, "H100");
  const err = assertThrows(() => getNode(ctx, "gpu-9"), '"gpu-9"');
  assertEquals(err instanceof NotFoundError, true);
});
