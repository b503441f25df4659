import { assertEquals } from "../../tests/assert.ts";
import { MAX_QUERY_SERIES } from "../../protocol/rest/metrics.ts";
import { firstScreenPanels, keysForOneQuery } from "./workspace.ts";

Deno.test("keysForOneQuery() keeps the panels one metrics query can carry, in panel order", () => {
  const panels = ["a", "b", "c", "d", "e", "f"];
  const cases: [string, number, string[]][] = [
    ["few runs: every panel", 10, panels],
    ["as many series as a query holds", MAX_QUERY_SERIES / 4, ["a", "b", "c", "d"]],
    ["more runs than a query holds with one key: none", MAX_QUERY_SERIES + 1, []],
    ["no runs drawn: nothing to read", 0, []],
  ];
  for (const [name, runs, want] of cases) assertEquals(keysForOneQuery(panels, runs), want, name);
});

Deno.test("firstScreenPanels() keeps the panel on top and the grid's first row (two without one on top)", () => {
  const panels = ["eval/a", "train/loss", "eval/b", "eval/c", "eval/d", "eval/e"];
  assertEquals(firstScreenPanels(panels, "train/loss"), ["eval/a", "train/loss", "eval/b"]);
  assertEquals(firstScreenPanels(panels, null), ["eval/a", "train/loss", "eval/b", "eval/c"]);
  assertEquals(firstScreenPanels(panels, "gone"), ["eval/a", "train/loss", "eval/b", "eval/c"]);
  assertEquals(firstScreenPanels([], "train/loss"), []);
});
