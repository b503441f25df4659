import { assertEquals } from "../tests/assert.ts";
import { LogBatcher } from "./log_batcher.ts";
import type { OutputLine } from "./runner/types.ts";

const line = (seq: number): OutputLine => ({
  seq,
  ts: "2024-01-01T00:00:00.000Z",
  stream: "stdout",
  text: `line ${seq}`,
});

Deno.test("LogBatcher sends lines together after a short wait, in order", async () => {
  const batches: number[][] = [];
  const batcher = new LogBatcher({
    send: (lines) => Promise.resolve(void batches.push(lines.map((l) => l.seq))),
    flushMs: 30,
  });
  batcher.add(line(1));
  batcher.add(line(2));
  assertEquals(batches, []);
  await new Promise((resolve) => setTimeout(resolve, 80));
  assertEquals(batches, [[1, 2]]);
  batcher.add(line(3));
  await batcher.flush();
  assertEquals(batches, [[1, 2], [3]]);
});

Deno.test("LogBatcher sends a full batch at once and never reorders slow sends", async () => {
  const batches: number[][] = [];
  let slow = true;
  const batcher = new LogBatcher({
    send: async (lines) => {
      if (slow) {
        slow = false;
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      batches.push(lines.map((l) => l.seq));
    },
    flushMs: 10_000,
    maxLines: 3,
  });
  for (let seq = 1; seq <= 7; seq++) batcher.add(line(seq));
  await batcher.flush();
  assertEquals(batches, [[1, 2, 3], [4, 5, 6], [7]]);
});

Deno.test("LogBatcher cuts lines longer than the protocol allows", async () => {
  let text = "";
  const batcher = new LogBatcher({ send: (lines) => Promise.resolve(void (text = lines[0].text)) });
  batcher.add({ ...line(1), text: "x".repeat(70_000) });
  await batcher.flush();
  assertEquals(text.length, 65_536);
});
