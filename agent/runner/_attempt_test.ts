import { assertEquals } from "../../tests/assert.ts";
import { alignedDelay, onGrid } from "./_attempt.ts";

Deno.test("alignedDelay() wakes attempts polling at the same interval on the same tick", () => {
  // Two attempts that last polled at different moments wake together at the next 500 ms mark.
  assertEquals(alignedDelay(500, 10_120) + 10_120, 10_500);
  assertEquals(alignedDelay(500, 10_490) + 10_490, 10_500);
  assertEquals(alignedDelay(500, 10_500), 500, "on a mark: the next one, never 0");
  assertEquals(alignedDelay(100, 10_120), 80);
  assertEquals(alignedDelay(0, 10_120), 0, "an immediate tick stays immediate");
});

Deno.test("onGrid() runs callbacks due at one moment together, and a cancelled one not at all", async () => {
  const ran: string[] = [];
  let done!: () => void;
  const finished = new Promise<void>((resolve) => done = resolve);
  // A long interval: every callback below lands on the same mark of the clock.
  onGrid(50, () => ran.push("a"));
  const cancelB = onGrid(50, () => ran.push("b"));
  onGrid(50, () => {
    ran.push("c");
    done();
  });
  cancelB();
  await finished;
  assertEquals(ran, ["a", "c"]);
  // Cancelling every callback of a moment stops its timer (the test would leak it otherwise).
  const cancels = [onGrid(60_000, () => ran.push("never")), onGrid(60_000, () => ran.push("x"))];
  for (const cancel of cancels) cancel();
  assertEquals(ran, ["a", "c"]);
});
