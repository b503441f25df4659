import { assertEquals } from "../../tests/assert.ts";
import { median, searchOutcome, spread, type Trial } from "./summary.ts";

const trial = (
  start: number,
  end: number,
  value: number | null,
  stopped_at: number | null = null,
) => ({ start, end, value, stopped_at }) as Trial;

Deno.test("searchOutcome() counts trial-seconds in the order trials ended until the running best is within 1 % of the best", () => {
  const out = searchOutcome([
    trial(0, 2, 1.0),
    trial(10, 11, null, 40), // stopped early: counts its second, never a best
    trial(2, 5, 0.505), // within 1 % of 0.5: reached here, after 2 + 3 s
    trial(11, 15, 0.5),
  ]);
  assertEquals(out, { best: 0.5, toWithinS: 5, trialS: 10, trials: 4, stopped: 1 });
});

Deno.test("searchOutcome() has no best when every trial was stopped, and ignores NaN finals", () => {
  assertEquals(searchOutcome([trial(0, 1, null, 40), trial(1, 3, NaN)]), {
    best: null,
    toWithinS: null,
    trialS: 3,
    trials: 2,
    stopped: 1,
  });
});

Deno.test("median() and spread() leave out seeds without a number and say so", () => {
  assertEquals(median([3, null, 1, 2]), 2);
  assertEquals(median([4, 1, 3, 2]), 2.5);
  assertEquals(median([null]), null);
  assertEquals(spread([2, null, 1, 3], "s"), "median 2 s (1–3), 3 of 4 seeds");
  assertEquals(spread([null, null]), "none in 2 seeds");
});
