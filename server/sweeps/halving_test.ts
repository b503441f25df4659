import { assertEquals } from "../../tests/assert.ts";
import { decideRung, rungsReached } from "./halving.ts";

const v = (index: number, value: number | null, running = true) => ({ index, value, running });
const stopped = (stops: { index: number }[]) => stops.map((s) => s.index);

Deno.test("rungsReached() starts at min_steps and repeats every `every` steps", () => {
  const s = { min_steps: 20, every: 30, keep_fraction: 0.5 };
  assertEquals(rungsReached(10, s), []);
  assertEquals(rungsReached(20, s), [20]);
  assertEquals(rungsReached(85, s), [20, 50, 80]);
});

Deno.test("decideRung() stops running trials below the best half, lower being better", () => {
  const stops = decideRung(
    50,
    [v(0, 0.9), v(1, 0.3), v(2, 0.5), v(3, 0.7)],
    "min",
    0.5,
    "eval/loss",
  );
  assertEquals(stopped(stops), [3, 0]);
  assertEquals(
    stops[0].reason,
    "stopped at rung 50: eval/loss 0.7 at step 50 is not among the best 2 of 4 trials there (≤ 0.5; best 0.3)",
  );
});

Deno.test("decideRung() reads higher as better for a max metric", () => {
  assertEquals(stopped(decideRung(10, [v(0, 0.9), v(1, 0.3), v(2, 0.5)], "max", 0.5, "acc")), [1]);
});

Deno.test("decideRung() keeps trials with no value at the rung, and decides nothing alone", () => {
  assertEquals(decideRung(10, [v(0, 0.9), v(1, null)], "min", 0.5, "loss"), []);
  assertEquals(decideRung(10, [v(0, 0.9)], "min", 0.5, "loss"), []);
});

Deno.test("decideRung() ranks NaN last and never stops a trial that already ended", () => {
  assertEquals(stopped(decideRung(10, [v(0, NaN), v(1, 0.4), v(2, 0.2)], "min", 0.33, "loss")), [
    1,
    0,
  ]);
  // The worse of two is kept when it already finished: only running trials are stopped.
  assertEquals(decideRung(10, [v(0, 0.9, false), v(1, 0.3)], "min", 0.5, "loss"), []);
});

Deno.test("decideRung() keeps every trial tied with the last one kept", () => {
  assertEquals(stopped(decideRung(10, [v(0, 0.5), v(1, 0.5), v(2, 0.9)], "min", 0.34, "loss")), [
    2,
  ]);
});
