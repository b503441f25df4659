import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { assertEquals } from "../../tests/assert.ts";
import { defaultDirection, primaryMetricOf, resolvePrimaryKey } from "./primary_metric.ts";

Deno.test("defaultDirection() reads the direction from the key's name", () => {
  const table: [string, MetricDirection | null][] = [
    ["train/loss", "min"],
    ["eval/wer", "min"],
    ["val/perplexity", "min"],
    ["eval/accuracy", "max"],
    ["bleu", "max"],
    ["eval/f1", "max"],
    ["lr", null],
  ];
  for (const [key, want] of table) assertEquals(defaultDirection(key), want, key);
});

Deno.test("resolvePrimaryKey() resolves experiment before project before global", () => {
  const defs = [
    { scope: "global" as const, scope_id: "", key: "g", direction: "max" as const, primary: true },
    {
      scope: "project" as const,
      scope_id: "p",
      key: "pk",
      direction: "min" as const,
      primary: true,
    },
    {
      scope: "experiment" as const,
      scope_id: "p/e",
      key: "ek",
      direction: "max" as const,
      primary: true,
    },
  ];
  assertEquals(resolvePrimaryKey({ project: "p", experiment: "e" }, defs, []), {
    key: "ek",
    direction: "max",
  });
  assertEquals(resolvePrimaryKey({ project: "p", experiment: "other" }, defs, []), {
    key: "pk",
    direction: "min",
  });
  assertEquals(resolvePrimaryKey({ project: "q", experiment: null }, defs, []), {
    key: "g",
    direction: "max",
  });
});

Deno.test("resolvePrimaryKey() falls back to a held-out loss, then any named metric", () => {
  assertEquals(
    resolvePrimaryKey({ project: "p", experiment: null }, [], ["train/loss", "eval/loss"]),
    {
      key: "eval/loss",
      direction: "min",
    },
  );
  assertEquals(
    resolvePrimaryKey({ project: "p", experiment: null }, [], ["sys/gpu0/util", "acc"]),
    {
      key: "acc",
      direction: "max",
    },
  );
  assertEquals(resolvePrimaryKey({ project: "p", experiment: null }, [], ["lr"]), null);
});

Deno.test("primaryMetricOf() takes best from the extreme that the direction prefers", () => {
  const summary = {
    key: "acc",
    points: 3,
    first_step: 0,
    last_step: 2,
    last_value: 0.8,
    last_wall_time: 1,
    min_value: 0.1,
    min_step: 0,
    max_value: 0.9,
    max_step: 1,
  };
  assertEquals(primaryMetricOf({ key: "acc", direction: "max" }, summary), {
    key: "acc",
    direction: "max",
    latest: 0.8,
    best: 0.9,
    best_step: 1,
  });
});
