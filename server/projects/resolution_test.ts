import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { assert, assertEquals, assertThrows } from "../../tests/assert.ts";
import type { MetricDefinition } from "../../protocol/objects.ts";
import { NotFoundError } from "../errors.ts";
import { sdkRun, testContext } from "../runs/_test_context.ts";
import { experimentMetricResolution, resolveMetricDefinitions } from "./resolution.ts";
import { setMetricDefinitions } from "./service.ts";

const def = (
  scope: MetricDefinition["scope"],
  scope_id: string,
  key: string,
  direction: MetricDirection,
  primary = false,
): MetricDefinition => ({ scope, scope_id, key, direction, primary });

const SCOPE = { project: "p", experiment: "e" };

Deno.test("resolveMetricDefinitions() names the level each key's direction came from", () => {
  const defs = [
    def("global", "", "eval/acc", "max", true),
    def("global", "", "score", "min"),
    def("project", "p", "score", "max"),
    def("experiment", "p/e", "score", "min"),
    // Other scopes never count.
    def("project", "q", "eval/acc", "min"),
    def("experiment", "p/other", "lr", "max", true),
  ];
  const r = resolveMetricDefinitions(SCOPE, defs, ["train/loss", "lr", "sys/cpu_pct"]);
  assertEquals(r.chain, [
    { level: "experiment", scope_id: "p/e" },
    { level: "project", scope_id: "p" },
    { level: "global", scope_id: "" },
  ]);
  assertEquals(r.primary, { key: "eval/acc", direction: "max", from: "global" });
  assertEquals(r.keys, [
    { key: "eval/acc", direction: "max", from: "global", overridden: [], primary: true },
    { key: "lr", direction: null, from: null, overridden: [], primary: false },
    {
      key: "score",
      direction: "min",
      from: "experiment",
      overridden: [{ level: "project", direction: "max" }, { level: "global", direction: "min" }],
      primary: false,
    },
    { key: "train/loss", direction: "min", from: "name", overridden: [], primary: false },
  ]);
});

Deno.test("resolveMetricDefinitions() takes the most specific primary, then a record's, then a known key", () => {
  const defs = [def("global", "", "g", "max", true), def("project", "p", "pk", "min", true)];
  assertEquals(resolveMetricDefinitions(SCOPE, defs, []).primary, {
    key: "pk",
    direction: "min",
    from: "project",
  });
  assertEquals(
    resolveMetricDefinitions({ ...SCOPE, experimentPrimary: "eval/f1" }, defs, []).primary,
    { key: "eval/f1", direction: "max", from: "experiment" },
  );
  assertEquals(resolveMetricDefinitions(SCOPE, [], ["lr", "eval/loss"]).primary, {
    key: "eval/loss",
    direction: "min",
    from: "default",
  });
  assertEquals(resolveMetricDefinitions(SCOPE, [], ["lr"]).primary, null);
});

Deno.test("experimentMetricResolution() reads the experiment's runs and the stored definitions", () => {
  const ctx = testContext();
  sdkRun(ctx, { project: "vision", experiment: "sweep" }, {
    points: [{ key: "eval/acc", step: 1, value: 0.5 }, { key: "train/loss", step: 1, value: 2 }],
  });
  const e = (ctx.db.sqlite.prepare("SELECT id FROM experiments").get() as { id: string }).id;
  assertEquals(experimentMetricResolution(ctx, e).primary?.key, "train/loss");
  setMetricDefinitions(ctx, {
    definitions: [
      { scope: "project", scope_id: "vision", key: "eval/acc", direction: "max", primary: true },
    ],
  });
  const r = experimentMetricResolution(ctx, e);
  assertEquals(r.primary, { key: "eval/acc", direction: "max", from: "project" });
  assertEquals(r.keys.map((k) => [k.key, k.from]), [["eval/acc", "project"], [
    "train/loss",
    "name",
  ]]);
  assert(assertThrows(() => experimentMetricResolution(ctx, "e-none")) instanceof NotFoundError);
});
