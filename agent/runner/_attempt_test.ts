import { assertEquals } from "../../tests/assert.ts";
import { alignedDelay } from "./_attempt.ts";

Deno.test("alignedDelay() wakes attempts polling at the same interval on the same tick", () => {
  // Two attempts that last polled at different moments wake together at the next 500 ms mark.
  assertEquals(alignedDelay(500, 10_120) + 10_120, 10_500);
  assertEquals(alignedDelay(500, 10_490) + 10_490, 10_500);
  assertEquals(alignedDelay(500, 10_500), 500, "on a mark: the next one, never 0");
  assertEquals(alignedDelay(100, 10_120), 80);
  assertEquals(alignedDelay(0, 10_120), 0, "an immediate tick stays immediate");
});
