import { assertEquals } from "../../tests/assert.ts";
import { LEASE_MARGIN_MS, leaseHold } from "./lease.ts";

const NOW = new Date("2026-01-01T12:00:00Z");

Deno.test("leaseHold() waits out the rest of the lease, the grace and the margin", () => {
  const hold = leaseHold({ fenceAfterS: 60, graceS: 5, marginMs: LEASE_MARGIN_MS }, 20_000, NOW);
  assertEquals(hold, { until: new Date("2026-01-01T12:00:50Z") });
});

Deno.test("leaseHold() never waits less than nothing for a node silent past its lease", () => {
  const hold = leaseHold({ fenceAfterS: 10, graceS: 5, marginMs: 0 }, 60_000, NOW);
  assertEquals(hold, { until: NOW });
});

Deno.test("leaseHold() holds for good when the agent keeps no lease", () => {
  const hold = leaseHold({ fenceAfterS: null, graceS: 5, marginMs: 0 }, 0, NOW);
  assertEquals(hold.until, null);
});
