import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import type { Run } from "../../protocol/objects.ts";
import { aRun, aSummary } from "./_fixtures.ts";
import { compareRuns, type CompareRunsInput } from "./compare_runs.ts";

const NOW = new Date("2026-01-01T01:00:00.000Z");

function run(id: string, key: string, direction: MetricDirection, over: Partial<Run> = {}) {
  return aRun({
    id,
    name: id,
    primary_metric: { key, direction, latest: null, best: null, best_step: null },
    ...over,
  });
}

function input(over: Partial<CompareRunsInput> = {}): CompareRunsInput {
  return {
    runs: [
      {
        run: run("a", "eval/loss", "min", { config: { lr: 0.1, seed: 1 }, step: 900 }),
        keys: [
          aSummary("eval/loss", {
            min_value: 0.3,
            min_step: 800,
            last_value: 0.35,
            last_step: 900,
          }),
          aSummary("eval/acc", { max_value: 0.8, max_step: 900 }),
        ],
      },
      {
        run: run("b", "eval/loss", "min", { config: { lr: 0.01, seed: 1 } }),
        keys: [
          aSummary("eval/loss", { min_value: 0.2, min_step: 500, last_value: 0.2 }),
          aSummary("eval/acc", { max_value: 0.9, max_step: 400 }),
        ],
      },
      {
        run: run("c", "eval/loss", "min", { config: { lr: 0.001, seed: 1 } }),
        keys: [
          aSummary("eval/loss", { min_value: 0.25, min_step: 700, last_value: NaN }),
          aSummary("eval/acc", { max_value: 0.85, max_step: 700 }),
        ],
      },
    ],
    directions: { "eval/loss": "min", "eval/acc": "max" },
    now: NOW,
    ...over,
  };
}

Deno.test("compareRuns() ranks a min metric lowest first and a max metric highest first", () => {
  const table: [string, string | undefined, string[], number[]][] = [
    ["primary eval/loss (min)", undefined, ["b", "c", "a"], [0.2, 0.25, 0.3]],
    ["eval/acc asked (max)", "eval/acc", ["b", "c", "a"], [0.9, 0.85, 0.8]],
  ];
  for (const [name, metric, ranking, bests] of table) {
    const c = compareRuns(input({ metric }));
    assertEquals(c.ranking, ranking, name);
    assertEquals(ranking.map((id) => c.runs.find((r) => r.run_id === id)!.best), bests, name);
    assertEquals(c.comparable, true, name);
  }
});

Deno.test("compareRuns() reports best step, latest, rank and duration per run", () => {
  const c = compareRuns(input());
  const a = c.runs[0];
  assertEquals([a.best, a.best_step, a.latest, a.latest_step, a.rank, a.steps], [
    0.3,
    800,
    0.35,
    900,
    3,
    900,
  ]);
  assertEquals(a.duration_s, 3600);
  assertEquals(c.runs[2].latest, "NaN");
});

Deno.test("compareRuns() shows only the config keys that differ", () => {
  const c = compareRuns(input());
  assertEquals(c.config_diff, [{ key: "lr", values: { a: 0.1, b: 0.01, c: 0.001 } }]);
  assertEquals(c.identical_config_keys, 1);
  assertStringIncludes(c.summary, "Configs differ in 1 key: lr");
  assertStringIncludes(c.summary, 'by best "eval/loss" (lower is better): b "b" 0.2 at step 500');
});

Deno.test("compareRuns() explains runs whose primary metrics disagree and offers a common key", () => {
  const base = input();
  base.runs[1].run = run("b", "eval/acc", "max");
  const c = compareRuns(base);
  assertEquals([c.comparable, c.metric, c.ranking], [false, null, []]);
  assertStringIncludes(c.reason!, 'b → "eval/acc"');
  assertEquals(c.common_keys, ["eval/acc", "eval/loss"]);
  assertEquals(c.next_actions, [{
    tool: "compare_runs",
    args: { runs: ["a", "b", "c"], metric: "eval/acc" },
    why: 'Compare on "eval/acc", a key every run has',
  }]);
});

Deno.test("compareRuns() on a key without a direction assumes min and says so", () => {
  const base = input({ metric: "tokens", directions: {} });
  base.runs.forEach((r, i) => r.keys.push(aSummary("tokens", { min_value: 10 - i })));
  const c = compareRuns(base);
  assertEquals(c.metric, { key: "tokens", direction: "min" });
  assertEquals(c.ranking, ["c", "b", "a"]);
  assertStringIncludes(c.summary, "assumed");
});

Deno.test("compareRuns() leaves a run without the metric unranked and names it", () => {
  const base = input({ metric: "eval/acc" });
  base.runs[2].keys = base.runs[2].keys.filter((k) => k.key !== "eval/acc");
  const c = compareRuns(base);
  assertEquals(c.ranking, ["b", "a"]);
  assertEquals(c.runs[2].rank, null);
  assertStringIncludes(c.summary, 'No value of "eval/acc" in: c');
  assertEquals(c.next_actions[0], {
    tool: "get_best_checkpoint",
    args: { run_id: "b" },
    why: "Pick the checkpoint of the best run b",
  });
});
