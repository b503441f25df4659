import { assertEquals } from "../tests/assert.ts";
import { LogBatcher } from "./log_batcher.ts";
import type { OutputLine } from "./runner/types.ts";

const line = (seq: number): OutputLine => ({
  seq,
  ts: "2024-01-01T00:00:00.000Z",
  stream: "stdout",
  text: `line ${seq}`,
});

/** A manual clock for the batcher's timer: the test fires what is due. */
function manualTimers() {
  const timers: { fn: () => void; ms: number; cancelled: boolean }[] = [];
  return {
    timers,
    setTimer(fn: () => void, ms: number) {
      const timer = { fn, ms, cancelled: false };
      timers.push(timer);
      return () => void (timer.cancelled = true);
    },
    /** Fires the timers not cancelled (each once). */
    fire() {
      for (const t of timers.splice(0)) if (!t.cancelled) t.fn();
    },
  };
}

Deno.test("LogBatcher sends lines together after a short wait, in order", async () => {
  const batches: number[][] = [];
  let onSend = () => {};
  const clock = manualTimers();
  const batcher = new LogBatcher({
    send: (lines) => {
      batches.push(lines.map((l) => l.seq));
      onSend();
      return Promise.resolve();
    },
    flushMs: 30,
    setTimer: clock.setTimer,
  });
  batcher.add(line(1));
  batcher.add(line(2));
  // One wait of flushMs for both lines, and nothing sent before it ends.
  assertEquals(clock.timers.map((t) => t.ms), [30]);
  assertEquals(batches, []);
  const sent = new Promise<void>((resolve) => onSend = resolve);
  clock.fire();
  await sent;
  assertEquals(batches, [[1, 2]]);
  batcher.add(line(3));
  await batcher.flush();
  assertEquals(batches, [[1, 2], [3]]);
  // The explicit flush cancelled the wait it made moot.
  assertEquals(clock.timers.map((t) => t.cancelled), [true]);
});

Deno.test("LogBatcher sends a full batch at once and never reorders slow sends", async () => {
  const batches: number[][] = [];
  // The first send hangs until the test releases it.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  let first = true;
  const clock = manualTimers();
  const batcher = new LogBatcher({
    send: async (lines) => {
      if (first) {
        first = false;
        await gate;
      }
      batches.push(lines.map((l) => l.seq));
    },
    flushMs: 10_000,
    maxLines: 3,
    setTimer: clock.setTimer,
  });
  for (let seq = 1; seq <= 7; seq++) batcher.add(line(seq));
  const flushed = batcher.flush();
  assertEquals(batches, []);
  release();
  await flushed;
  assertEquals(batches, [[1, 2, 3], [4, 5, 6], [7]]);
});

Deno.test("LogBatcher cuts lines longer than the protocol allows", async () => {
  let text = "";
  const batcher = new LogBatcher({ send: (lines) => Promise.resolve(void (text = lines[0].text)) });
  batcher.add({ ...line(1), text: "x".repeat(70_000) });
  await batcher.flush();
  assertEquals(text.length, 65_536);
});
