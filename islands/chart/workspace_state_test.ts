import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { assertEquals } from "../../tests/assert.ts";
import { decodeView } from "./view_state.ts";
import {
  addablePanels,
  bestRunId,
  compareHref,
  compareRows,
  type ComparisonView,
  configText,
  DEFAULT_DRAWN_RUNS,
  drawnRuns,
  keepOrder,
  panelLayout,
  rankRuns,
  refreshRows,
  shownPanels,
  toggleRun,
  type WorkspaceRow,
} from "./workspace_state.ts";

const run = (id: string, best: number | null) => ({ id, best });
const ids = (rs: { id: string }[]) => rs.map((r) => r.id);

Deno.test("rankRuns() sorts best first in the metric's direction, runs without a value last", () => {
  const runs = [run("a", 0.5), run("b", null), run("c", 0.2), run("d", NaN), run("e", 0.9)];
  const cases: [string, MetricDirection | null, string[]][] = [
    ["lower is better", "min", ["c", "a", "e", "b", "d"]],
    ["higher is better", "max", ["e", "a", "c", "b", "d"]],
    ["no direction keeps the order", null, ["a", "b", "c", "d", "e"]],
  ];
  for (const [name, direction, want] of cases) {
    assertEquals(ids(rankRuns(runs, direction)), want, name);
  }
  // Ties keep their order (newest first, as listed).
  assertEquals(ids(rankRuns([run("x", 1), run("y", 1), run("z", 0)], "min")), ["z", "x", "y"]);
});

Deno.test("bestRunId() is the top run only when it has a value", () => {
  assertEquals(bestRunId([run("a", 0.1), run("b", 0.2)]), "a");
  assertEquals(bestRunId([run("a", null)]), null);
  assertEquals(bestRunId([]), null);
});

Deno.test("drawnRuns() keeps the URL's runs that exist in ranking order, else the top ten", () => {
  const ranked = Array.from({ length: 14 }, (_, i) => run(`r${i}`, i));
  const cases: [string, string[], string[]][] = [
    ["named runs, in ranking order", ["r5", "r2"], ["r2", "r5"]],
    ["unknown ids are dropped", ["r3", "gone"], ["r3"]],
    ["none named: the best ten", [], ids(ranked.slice(0, DEFAULT_DRAWN_RUNS))],
    ["only unknown ids: the best ten", ["gone"], ids(ranked.slice(0, DEFAULT_DRAWN_RUNS))],
  ];
  for (const [name, asked, want] of cases) assertEquals(drawnRuns(asked, ranked), want, name);
  assertEquals(drawnRuns([], [run("only", null)]), ["only"]);
});

Deno.test("shownPanels() keeps the URL's known keys in order, else the primary and the next keys", () => {
  const keys = ["train/loss", "eval/loss", "lr", "sys/gpu0/util", "acc", "grad_norm", "tokens"];
  const cases: [string, string[], string | null, string[]][] = [
    ["the URL's order, once each", ["lr", "eval/loss", "lr"], "train/loss", ["lr", "eval/loss"]],
    ["unknown keys are dropped", ["nope", "acc"], "train/loss", ["acc"]],
    ["default: primary first, no telemetry, five in all", [], "train/loss", [
      "train/loss",
      "acc",
      "eval/loss",
      "grad_norm",
      "lr",
    ]],
    ["no primary", [], null, ["acc", "eval/loss", "grad_norm", "lr", "tokens"]],
    ["a primary no run logged yet still shows", [], "val/bleu", [
      "val/bleu",
      "acc",
      "eval/loss",
      "grad_norm",
      "lr",
    ]],
  ];
  for (const [name, asked, primary, want] of cases) {
    assertEquals(shownPanels(asked, keys, primary), want, name);
  }
});

Deno.test("panelLayout() puts the primary on top and the rest in the grid; addablePanels() the others", () => {
  assertEquals(panelLayout(["a", "loss", "b"], "loss"), { top: "loss", grid: ["a", "b"] });
  assertEquals(panelLayout(["a", "b"], "loss"), { top: null, grid: ["a", "b"] });
  assertEquals(panelLayout(["a"], null), { top: null, grid: ["a"] });
  assertEquals(addablePanels(["sys/x", "b", "a", "loss"], ["loss"]), ["a", "b", "sys/x"]);
});

Deno.test("toggleRun() checks and unchecks a run, keeping the ranking's order", () => {
  const ranked = [run("a", 1), run("b", 2), run("c", 3)];
  assertEquals(toggleRun(["c"], "a", true, ranked), ["a", "c"]);
  assertEquals(toggleRun(["a", "c"], "a", false, ranked), ["c"]);
  assertEquals(toggleRun(["a"], "a", true, ranked), ["a"]);
});

Deno.test("compareHref() names the runs and keeps smoothing and axis, as the page decodes them", () => {
  const href = compareHref(["r,1", "r2"], { smooth: 0.6, x: "relative" });
  const v = decodeView(new URL(href, "http://x").searchParams);
  assertEquals(v.runs, ["r,1", "r2"]);
  assertEquals([v.smooth, v.x], [0.6, "relative"]);
  assertEquals(compareHref(["a", "b"], { smooth: 0, x: "step" }), "/compare?runs=a%2Cb");
});

Deno.test("compareRows() puts the ranked runs first and lines up each differing config value", () => {
  const c: ComparisonView = {
    metric: { key: "loss", direction: "min" },
    reason: null,
    common_keys: ["loss"],
    summary: "",
    ranking: ["b", "a"],
    runs: ["a", "b", "c"].map((id, i) => ({
      run_id: id,
      name: id,
      status: "SUCCEEDED",
      best: id === "c" ? null : i,
      best_step: null,
      latest: null,
      steps: null,
      duration_s: null,
      rank: null,
    })),
    config_diff: [
      { key: "lr", values: { a: 0.1, b: 0.01, c: 0.001 } },
      { key: "opt", values: { a: "adam", b: null } },
    ],
  };
  const rows = compareRows(c);
  assertEquals(rows.map((r) => [r.run_id, r.best_run, r.config]), [
    ["b", true, [0.01, null]],
    ["a", false, [0.1, "adam"]],
    ["c", false, [0.001, null]],
  ]);
  assertEquals(compareRows({ ...c, ranking: [] }).map((r) => r.best_run), [false, false, false]);
  assertEquals([configText("adam"), configText(0.01), configText(null), configText([1])], [
    "adam",
    "0.01",
    "–",
    "[1]",
  ]);
});

Deno.test("refreshRows() takes status and progress from the list, values only from the same primary key", () => {
  const before: WorkspaceRow[] = [{
    id: "a",
    name: "a",
    status: "RUNNING",
    step: 10,
    max_steps: 100,
    created_at: "t",
    best: 0.5,
    latest: 0.6,
    live: true,
  }];
  const listed = (key: string | null, status = "SUCCEEDED") => [{
    id: "a",
    name: "a",
    status,
    step: 100,
    max_steps: 100,
    created_at: "t",
    primary_metric: key === null ? null : { key, best: 0.2, latest: "NaN" },
  }];
  const cases: [string, ReturnType<typeof listed>, Partial<WorkspaceRow>][] = [
    ["the experiment's key: its values", listed("loss"), { best: 0.2, latest: "NaN" }],
    ["another key: the values stay", listed("acc"), { best: 0.5, latest: 0.6 }],
    ["no primary: the values stay", listed(null), { best: 0.5, latest: 0.6 }],
  ];
  for (const [name, rows, want] of cases) {
    const [row] = refreshRows(rows, "loss", before);
    assertEquals(row, { ...before[0], status: "SUCCEEDED", step: 100, live: false, ...want }, name);
  }
  assertEquals(refreshRows(listed("loss", "QUEUED"), "loss", [])[0].live, true, "a new run");
});

Deno.test("keepOrder() keeps the rows where they were, new ones at the end", () => {
  const rows = [run("c", 1), run("new", 2), run("a", 3), run("b", 4)];
  assertEquals(ids(keepOrder(rows, ["a", "b", "c", "gone"])), ["a", "b", "c", "new"]);
  assertEquals(ids(keepOrder(rows, [])), ["c", "new", "a", "b"]);
});
