import { assertEquals } from "../../tests/assert.ts";
import { emphasis, EMPTY_LEGEND, isVisible, legendClick, legendHover } from "./legend.ts";

const runs = ["a", "b", "c"];

Deno.test("legendClick() hides a run and shows it again on a second click", () => {
  const once = legendClick(EMPTY_LEGEND, "b", runs, false);
  assertEquals(once.hidden, ["b"]);
  assertEquals(runs.filter((r) => isVisible(once, r)), ["a", "c"]);
  assertEquals(legendClick(once, "b", runs, false).hidden, []);
});

Deno.test("legendClick() with Ctrl/⌘ isolates a run, and again shows every run", () => {
  const alone = legendClick(EMPTY_LEGEND, "b", runs, true);
  assertEquals(alone.hidden, ["a", "c"]);
  assertEquals(legendClick(alone, "b", runs, true).hidden, []);
  // Isolating another run moves the isolation to it instead of showing all.
  assertEquals(legendClick(alone, "c", runs, true).hidden, ["a", "b"]);
  // A hidden run is isolated (shown alone), not left hidden.
  assertEquals(legendClick({ hidden: ["a"], hover: null }, "a", runs, true).hidden, ["b", "c"]);
});

Deno.test("emphasis() fades the other runs while one visible run is hovered", () => {
  const over = legendHover(EMPTY_LEGEND, "a");
  assertEquals(runs.map((r) => emphasis(over, r)), ["front", "faded", "faded"]);
  assertEquals(emphasis(legendHover(over, null), "b"), "normal");
  // Hovering a hidden run's entry fades nothing: there is nothing of it to bring forward.
  assertEquals(emphasis({ hidden: ["a"], hover: "a" }, "b"), "normal");
});

Deno.test("legendHover() keeps the same state when nothing changes", () => {
  const over = legendHover(EMPTY_LEGEND, "a");
  assertEquals(legendHover(over, "a") === over, true);
});
