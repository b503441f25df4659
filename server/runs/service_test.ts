import { assert, assertEquals, assertThrows } from "../../tests/assert.ts";
import { runListQuery } from "../../protocol/rest/runs.ts";
import { NotFoundError, ValidationError } from "../errors.ts";
import { sdkRun, testContext } from "./_test_context.ts";
import {
  getLogs,
  getRun,
  ingestSdkBatch,
  listCheckpoints,
  listMetricKeys,
  listRunGroups,
  listRuns,
  runStreamEnd,
} from "./service.ts";

const ids = (page: { items: { id: string }[] }) => page.items.map((r) => r.id);

function threeRuns() {
  const ctx = testContext();
  const a = sdkRun(ctx, {
    id: "r-a",
    project: "vision",
    experiment: "resnet",
    name: "ResNet-50 baseline",
  });
  const b = sdkRun(ctx, {
    id: "r-b",
    project: "vision",
    experiment: "resnet",
    name: "resnet lr sweep",
  }, {
    points: [{ key: "loss", step: 1, value: 2 }, { key: "loss", step: 2, value: 1 }],
    status: "SUCCEEDED",
  });
  const c = sdkRun(ctx, { id: "r-c", project: "nlp", name: "gpt small" });
  return { ctx, a, b, c };
}

Deno.test("listRuns() lists newest first, each run with its primary metric", () => {
  const { ctx } = threeRuns();
  const page = listRuns(ctx, {});
  assertEquals(ids(page), ["r-c", "r-b", "r-a"]);
  assertEquals(page.next_cursor, null);
  const b = page.items.find((r) => r.id === "r-b")!;
  assertEquals(b.primary_metric, {
    key: "loss",
    direction: "min",
    latest: 1,
    best: 1,
    best_step: 2,
  });
  assertEquals(page.items.find((r) => r.id === "r-a")!.primary_metric, null);
});

Deno.test("listRuns() filters by project, experiment, status and source", () => {
  const { ctx } = threeRuns();
  assertEquals(ids(listRuns(ctx, { project: "vision" })), ["r-b", "r-a"]);
  assertEquals(ids(listRuns(ctx, { project: "vision", experiment: "resnet" })), ["r-b", "r-a"]);
  assertEquals(ids(listRuns(ctx, { status: "SUCCEEDED" })), ["r-b"]);
  assertEquals(ids(listRuns(ctx, { source: "import" })), []);
  assertEquals(ids(listRuns(ctx, { project: "nowhere" })), []);
});

Deno.test("listRuns() q finds runs by part of the name or id, in any case", () => {
  const { ctx } = threeRuns();
  assertEquals(ids(listRuns(ctx, { q: "RESNET" })), ["r-b", "r-a"]);
  assertEquals(ids(listRuns(ctx, { q: "sweep" })), ["r-b"]);
  assertEquals(ids(listRuns(ctx, { q: "r-c" })), ["r-c"]);
  assertEquals(ids(listRuns(ctx, { q: "resnet", status: "RUNNING" })), ["r-a"]);
  // LIKE's wildcards in the search are plain characters.
  assertEquals(ids(listRuns(ctx, { q: "%" })), []);
  assertEquals(ids(listRuns(ctx, { q: "_" })), []);
  // The schema trims, and an empty search is no search.
  assertEquals(ids(listRuns(ctx, runListQuery.parse({ q: "  " }))), ["r-c", "r-b", "r-a"]);
});

Deno.test("listRuns() pages with next_cursor, without repeating or skipping a run", () => {
  const { ctx } = threeRuns();
  const first = listRuns(ctx, { limit: 2 });
  assertEquals(ids(first), ["r-c", "r-b"]);
  const second = listRuns(ctx, { limit: 2, cursor: first.next_cursor! });
  assertEquals(ids(second), ["r-a"]);
  assertEquals(second.next_cursor, null);
});

Deno.test("listRunGroups() counts the filtered runs by project and experiment, newest group first", () => {
  const { ctx } = threeRuns();
  const { groups } = listRunGroups(ctx, {});
  assertEquals(groups.map((g) => [g.project, g.experiment, g.runs, g.by_status]), [
    ["nlp", null, 1, { RUNNING: 1 }],
    ["vision", "resnet", 2, { RUNNING: 1, SUCCEEDED: 1 }],
  ]);
  // The last activity is the latest start or finish among the group's runs.
  const vision = groups[1];
  assertEquals(vision.last_activity_at, getRun(ctx, "r-b").finished_at);
  assertEquals(
    listRunGroups(ctx, { q: "sweep" }).groups.map((g) => [g.project, g.runs]),
    [["vision", 1]],
  );
  assertEquals(listRunGroups(ctx, { project: "none" }).groups, []);
});

Deno.test("getRun(), listMetricKeys(), getLogs() and listCheckpoints() name an unknown run", () => {
  const ctx = testContext();
  for (
    const call of [
      () => getRun(ctx, "r-missing"),
      () => listMetricKeys(ctx, "r-missing"),
      () => getLogs(ctx, "r-missing", {}),
      () => listCheckpoints(ctx, "r-missing"),
    ]
  ) {
    const err = assertThrows(call, 'Run "r-missing" does not exist');
    assert(err instanceof NotFoundError);
  }
});

Deno.test("listMetricKeys() lists each key with its summary, NaN spelled as a string", () => {
  const ctx = testContext();
  const id = sdkRun(ctx, { id: "r-1" }, {
    points: [{ key: "loss", step: 0, value: 1.5 }, { key: "loss", step: 1, value: NaN }, {
      key: "acc",
      step: 1,
      value: 0.5,
    }],
  });
  const { run_id, keys } = listMetricKeys(ctx, id);
  assertEquals(run_id, "r-1");
  assertEquals(keys.map((k) => [k.key, k.last_step, k.last_value]).sort(), [
    ["acc", 1, 0.5],
    ["loss", 1, "NaN"],
  ]);
});

Deno.test("getLogs() returns the tail by default and the lines after after_seq otherwise", () => {
  const ctx = testContext();
  const id = sdkRun(ctx, { id: "r-1" }, {
    logs: Array.from({ length: 10 }, (_, i) => ({ seq: i + 1, text: `line ${i + 1}` })),
  });
  const text = (r: { lines: { text: string }[] }) => r.lines.map((l) => l.text);
  assertEquals(text(getLogs(ctx, id, { limit: 3 })), ["line 8", "line 9", "line 10"]);
  assertEquals(text(getLogs(ctx, id, { after_seq: 2, limit: 3 })), ["line 3", "line 4", "line 5"]);
  assertEquals(getLogs(ctx, id, {}).lines.length, 10);
  assertEquals(getLogs(ctx, id, { after_seq: 10 }).lines, []);
});

Deno.test("listCheckpoints() lists the run's checkpoints by step with their evaluations", () => {
  const ctx = testContext();
  const id = sdkRun(ctx, { id: "r-1" }, {
    points: [{ key: "loss", step: 10, value: 0.5 }],
    checkpoints: [{ path: "/ckpt/b.pt", step: 20 }, { path: "/ckpt/a.pt", step: 10 }],
  });
  const page = listCheckpoints(ctx, id);
  assertEquals(page.next_cursor, null);
  assertEquals(page.items.map((c) => [c.path, c.step, c.evaluations]), [
    ["/ckpt/a.pt", 10, []],
    ["/ckpt/b.pt", 20, []],
  ]);
  assertEquals(page.items[0].metrics, { loss: 0.5 });
});

Deno.test("runStreamEnd() is null while the run may still write, its status once it ended", () => {
  const ctx = testContext();
  const id = sdkRun(ctx, { id: "r-1" });
  assertEquals(runStreamEnd(ctx, id), null);
  ingestSdkBatch(ctx, id, { status: "FAILED" });
  assertEquals(runStreamEnd(ctx, id), { run_id: id, status: "FAILED" });
});

Deno.test("ingestSdkBatch() stores the valid items, names the refused ones, refuses a non-object", () => {
  const ctx = testContext();
  const id = sdkRun(ctx, { id: "r-1" });
  const answer = ingestSdkBatch(ctx, id, {
    points: [{ key: "loss", step: 1, value: 1 }, { key: "loss", step: -1, value: 1 }],
  });
  assertEquals(answer.accepted, { points: 1, checkpoints: 0, logs: 0 });
  assertEquals(answer.refused?.count, 1);
  const err = assertThrows(() => ingestSdkBatch(ctx, id, [1, 2]), "a JSON object expected");
  assert(err instanceof ValidationError);
  assert(assertThrows(() => ingestSdkBatch(ctx, "r-missing", {})) instanceof NotFoundError);
});
