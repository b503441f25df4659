import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { assertEquals } from "../../tests/assert.ts";
import type { MetricDefinition } from "../../protocol/objects.ts";
import { keyDirection, keyDirections } from "./metric_direction.ts";

const def = (
  scope: MetricDefinition["scope"],
  scope_id: string,
  key: string,
  direction: MetricDirection,
): MetricDefinition => ({ scope, scope_id, key, direction, primary: false });

Deno.test("keyDirection() resolves experiment → project → global, then the name", () => {
  const defs = [
    def("global", "", "score", "min"),
    def("project", "p", "score", "max"),
    def("experiment", "p/e", "reward", "min"),
  ];
  const table: [string, { project: string; experiment: string | null }, string, string | null][] = [
    ["experiment definition wins", { project: "p", experiment: "e" }, "reward", "min"],
    ["project before global", { project: "p", experiment: "e" }, "score", "max"],
    ["global for another project", { project: "q", experiment: null }, "score", "min"],
    ["name default: loss", { project: "q", experiment: null }, "val/loss", "min"],
    ["name default: accuracy", { project: "q", experiment: null }, "accuracy", "max"],
    ["no hint", { project: "q", experiment: null }, "lr", null],
  ];
  for (const [name, scope, key, want] of table) {
    assertEquals(keyDirection(scope, defs, key), want, name);
  }
  assertEquals(keyDirections({ project: "q", experiment: null }, defs, ["lr", "acc"]), {
    acc: "max",
  });
});
