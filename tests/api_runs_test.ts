import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { type Harness, withHarness } from "./_harness.ts";
import { BLOCK_POINTS } from "../server/db/metric_blocks.ts";
import { SeriesCache } from "../server/metrics/series_cache.ts";
import { BlockSealer } from "../server/metrics/block_sealer.ts";

function sdkLog(h: Harness, runId: string, body: unknown) {
  return h.call("POST", `/api/sdk/runs/${runId}/log`, { body });
}

/** Every point of a series, page by page through `GET /api/runs/{id}/metrics/points`. */
async function allPoints(h: Harness, runId: string, key: string, limit: number) {
  const all = { steps: [] as number[], values: [] as unknown[], pages: 0 };
  let cursor: string | null = "";
  while (cursor !== null) {
    const after: string = cursor ? `&cursor=${cursor}` : "";
    const page = await h.call(
      "GET",
      `/api/runs/${runId}/metrics/points?key=${encodeURIComponent(key)}&limit=${limit}${after}`,
      { token: h.tokens.read },
    );
    assertEquals(page.status, 200, page.text);
    assert(page.json.steps.length <= limit);
    all.steps.push(...page.json.steps);
    all.values.push(...page.json.values);
    all.pages++;
    cursor = page.json.next_cursor;
  }
  return all;
}

async function sdkRun(h: Harness, body: Record<string, unknown> = {}) {
  const res = await h.call("POST", "/api/sdk/runs", {
    token: h.tokens.write,
    body: { project: "nlp", experiment: "base", name: "bert", config: { lr: 0.001 }, ...body },
  });
  assert(res.status === 201 || res.status === 200, res.text);
  return res.json;
}

Deno.test("an SDK run registers once per id and comes back with its config", async () => {
  await withHarness(async (h) => {
    const first = await h.call("POST", "/api/sdk/runs", {
      body: { id: "r-fixed0001", project: "nlp", name: "bert", config: { lr: 0.1 } },
    });
    assertEquals([first.status, first.json.id, first.json.source, first.json.status], [
      201,
      "r-fixed0001",
      "sdk",
      "RUNNING",
    ]);
    const again = await h.call("POST", "/api/sdk/runs", {
      body: { id: "r-fixed0001", project: "nlp", name: "bert" },
    });
    assertEquals(again.status, 200);
    const runs = await h.call("GET", "/api/runs?project=nlp");
    assertEquals(runs.json.items.length, 1);
    assertEquals(runs.json.items[0].config, { lr: 0.1 });
  });
});

Deno.test("points posted through the SDK come back from metrics:query, once each", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const points = Array.from({ length: 50 }, (_, i) => ({
      key: "train/loss",
      step: i,
      value: 1 / (i + 1),
      wall_time: 1_700_000_000 + i,
    }));
    const batch = { points, step: 49 };
    const r1 = await sdkLog(h, run.id, batch);
    assertEquals(r1.json.accepted.points, 50);
    // The same batch again (a client retry) changes nothing.
    await sdkLog(h, run.id, batch);
    const q = await h.call("POST", "/api/runs/metrics:query", {
      token: h.tokens.read,
      body: { runs: [run.id], keys: ["train/loss", "eval/loss"] },
    });
    assertEquals(q.status, 200);
    assertEquals(q.json.series.length, 1);
    const s = q.json.series[0];
    assertEquals(s.steps, points.map((p) => p.step));
    assertEquals(s.values, points.map((p) => p.value));
    assertEquals(s.wall_times, points.map((p) => p.wall_time));
    assertEquals(q.json.missing, [{
      run_id: run.id,
      key: "eval/loss",
      reason: "no such key in this run",
    }]);

    const got = (await h.call("GET", `/api/runs/${run.id}`)).json;
    assertEquals(got.step, 49);
    assertEquals(got.primary_metric, {
      key: "train/loss",
      direction: "min",
      latest: 1 / 50,
      best: 1 / 50,
      best_step: 49,
    });
  });
});

Deno.test("the newest write wins for the same key and step, and NaN travels as a string", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    await sdkLog(h, run.id, {
      points: [{ key: "loss", step: 1, value: 5 }, { key: "loss", step: 2, value: "NaN" }],
    });
    await sdkLog(h, run.id, {
      points: [{ key: "loss", step: 1, value: 3 }, { key: "loss", step: 3, value: "-Infinity" }],
    });
    const q = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [run.id], keys: ["loss"] },
    });
    assertEquals(q.json.series[0].values, [3, "NaN", "-Infinity"]);
    const metrics = await h.call("GET", `/api/runs/${run.id}/metrics`);
    assertEquals(metrics.json.keys[0].points, 3);
    assertEquals(metrics.json.keys[0].min_value, 3);
  });
});

Deno.test("metrics:query downsamples with LTTB to max_points and reports bucket extremes", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const points = Array.from({ length: 10_000 }, (_, i) => ({
      key: "loss",
      step: i,
      value: i === 7777 ? 50 : Math.exp(-i / 3000),
    }));
    await sdkLog(h, run.id, { points });
    const q = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [run.id, "r-missing"], keys: ["loss"], max_points: 200 },
    });
    const s = q.json.series[0];
    assertEquals(s.steps.length, 200);
    assertEquals(s.total_points, 10_000);
    assertEquals([s.steps[0], s.steps[199]], [0, 9999]);
    assert(s.steps.includes(7777), "the spike survives downsampling");
    assertEquals(Math.max(...s.max), 50);
    assertEquals(q.json.missing, [{ run_id: "r-missing", key: "loss", reason: "no such run" }]);

    const ranged = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [run.id], keys: ["loss"], range: [100, 199] },
    });
    assertEquals(ranged.json.series[0].steps.length, 100);
  });
});

Deno.test("log lines are kept in order, replays are ignored, and only the last 2000 stay", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const lines = Array.from({ length: 2500 }, (_, i) => ({ seq: i + 1, text: `line ${i + 1}` }));
    for (let i = 0; i < lines.length; i += 500) {
      await sdkLog(h, run.id, { logs: lines.slice(i, i + 500) });
    }
    const replay = await sdkLog(h, run.id, { logs: lines.slice(2400) });
    assertEquals(replay.json.accepted.logs, 0);
    const tail = await h.call("GET", `/api/runs/${run.id}/logs?limit=3`);
    assertEquals(tail.json.lines.map((l: { text: string }) => l.text), [
      "line 2498",
      "line 2499",
      "line 2500",
    ]);
    const after = await h.call("GET", `/api/runs/${run.id}/logs?after_seq=0&limit=2000`);
    assertEquals(after.json.lines.length, 2000);
    assertEquals(after.json.lines[0].seq, 501);
    // Lines without a seq continue the numbering.
    await sdkLog(h, run.id, { logs: [{ text: "tail", stream: "stderr" }] });
    const last = await h.call("GET", `/api/runs/${run.id}/logs?after_seq=2500`);
    assertEquals(last.json.lines.map((l: { seq: number; stream: string }) => [l.seq, l.stream]), [[
      2501,
      "stderr",
    ]]);
  });
});

Deno.test("checkpoints are registered once per path with the metrics at their step", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    await sdkLog(h, run.id, {
      points: [
        { key: "eval/loss", step: 100, value: 0.5 },
        { key: "eval/loss", step: 200, value: 0.4 },
      ],
    });
    const ck = { path: "/ckpt/step-250.pt", step: 250, size_bytes: 1234 };
    const r = await sdkLog(h, run.id, { checkpoints: [ck] });
    assertEquals(r.json.accepted.checkpoints, 1);
    await sdkLog(h, run.id, { checkpoints: [ck] });
    const list = await h.call("GET", `/api/runs/${run.id}/checkpoints`);
    assertEquals(list.json.items.length, 1);
    assertEquals(list.json.items[0].metrics, { "eval/loss": 0.4 });
    const events = await h.call("GET", `/api/events?run_id=${run.id}&type=CHECKPOINT_CREATED`);
    assertEquals(events.json.items.length, 1);
  });
});

Deno.test("finishing an SDK run records its status once and raises the matching event", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    await sdkLog(h, run.id, { status: "FAILED" });
    await sdkLog(h, run.id, { status: "SUCCEEDED" });
    const got = (await h.call("GET", `/api/runs/${run.id}`)).json;
    assertEquals(got.status, "FAILED");
    assert(got.finished_at);
    const types = (await h.call("GET", `/api/events?run_id=${run.id}`)).json.items.map((
      e: { type: string },
    ) => e.type);
    assertEquals(types, ["RUN_FAILED", "RUN_STARTED"]);
  });
});

Deno.test("metric definitions set the primary metric, experiment before project", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    await sdkLog(h, run.id, {
      points: [
        { key: "eval/acc", step: 1, value: 0.7 },
        { key: "eval/acc", step: 2, value: 0.9 },
        { key: "eval/acc", step: 3, value: 0.8 },
        { key: "eval/loss", step: 3, value: 0.3 },
      ],
    });
    assertEquals((await h.call("GET", `/api/runs/${run.id}`)).json.primary_metric.key, "eval/loss");
    const put = await h.call("PUT", "/api/metric-definitions", {
      body: {
        definitions: [{
          scope: "experiment",
          scope_id: "nlp/base",
          key: "eval/acc",
          direction: "max",
          primary: true,
        }],
      },
    });
    assertEquals(put.status, 200);
    const pm = (await h.call("GET", `/api/runs/${run.id}`)).json.primary_metric;
    assertEquals(pm, { key: "eval/acc", direction: "max", latest: 0.8, best: 0.9, best_step: 2 });
    const bad = await h.call("PUT", "/api/metric-definitions", {
      body: { definitions: [{ scope: "project", scope_id: "nope", key: "x", direction: "min" }] },
    });
    assertEquals(bad.status, 400);
    assertStringIncludes(
      bad.json.error.message,
      'definitions.0.scope_id: project "nope" does not exist',
    );
  });
});

Deno.test("runs list filters and pages", async () => {
  await withHarness(async (h) => {
    for (let i = 0; i < 3; i++) await sdkRun(h, { name: `a${i}` });
    await sdkRun(h, { project: "other", name: "b" });
    const page = await h.call("GET", "/api/runs?project=nlp&limit=2");
    assertEquals(page.json.items.map((r: { name: string }) => r.name), ["a2", "a1"]);
    const next = await h.call(
      "GET",
      `/api/runs?project=nlp&limit=2&cursor=${page.json.next_cursor}`,
    );
    assertEquals(next.json.items.map((r: { name: string }) => r.name), ["a0"]);
  });
});

Deno.test("an import registers one IMPORTED run per import key", async () => {
  await withHarness(async (h) => {
    const body = {
      import_key: "host:/old/exp",
      project: "legacy",
      experiment: "2023",
      name: "exp",
    };
    const first = await h.call("POST", "/api/imports", { body });
    assertEquals([first.status, first.json.created], [201, true]);
    assertEquals([first.json.run.source, first.json.run.status], ["import", "IMPORTED"]);
    const again = await h.call("POST", "/api/imports", { body: { ...body, name: "renamed" } });
    assertEquals([again.status, again.json.created, again.json.run.id], [
      200,
      false,
      first.json.run.id,
    ]);
    const points = [{ key: "loss", step: 0, value: 1, wall_time: 1_600_000_000 }];
    const r = await h.call("POST", `/api/sdk/runs/${first.json.run.id}/log`, { body: { points } });
    assertEquals(r.json.accepted.points, 1);
    assertEquals((await h.call("GET", "/api/runs?source=import")).json.items.length, 1);
  });
});

Deno.test("metrics:query stays right across appends and rewrites after a series was read", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const log = (points: unknown[]) => sdkLog(h, run.id, { points });
    const query = async () =>
      (await h.call("POST", "/api/runs/metrics:query", {
        body: { runs: [run.id], keys: ["loss"] },
      })).json
        .series[0];
    await log([{ key: "loss", step: 0, value: 1 }, { key: "loss", step: 1, value: 2 }]);
    assertEquals((await query()).values, [1, 2]);
    await log([{ key: "loss", step: 2, value: 3 }]);
    assertEquals((await query()).values, [1, 2, 3]);
    await log([{ key: "loss", step: 1, value: "NaN" }]);
    assertEquals((await query()).values, [1, "NaN", 3]);
    const ranged = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [run.id], keys: ["loss"], range: [1, 2] },
    });
    assertEquals(ranged.json.series[0].steps, [1, 2]);
  });
});

Deno.test("a long series reads the same after a restart, from sealed blocks, and after a rewrite", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const n = 3 * BLOCK_POINTS + 123;
    const points = Array.from({ length: n }, (_, i) => ({
      key: "loss",
      step: i,
      value: i === 5000 ? "NaN" : 1 / (i + 1),
      wall_time: 1_700_000_000 + i,
    }));
    await sdkLog(h, run.id, { points });
    const query = async () =>
      (await h.call("POST", "/api/runs/metrics:query", {
        body: { runs: [run.id], keys: ["loss"], max_points: 500 },
      })).json.series[0];
    const restart = () => h.ctx.series = new SeriesCache(); // an empty cache, as after a restart
    const first = await query();
    const sealer = new BlockSealer(h.ctx); // what the server runs in the background
    while (sealer.runOnce() > 0) { /* until every whole block is sealed */ }
    const blocks = () =>
      (h.ctx.db.sqlite.prepare("SELECT COUNT(*) AS n FROM metric_blocks").get() as { n: number })
        .n;
    assertEquals(blocks(), 3, "the whole blocks are sealed; the last 123 points stay rows");
    restart();
    assertEquals(await query(), first);
    // Steps rewritten inside the sealed part (training resumed from a checkpoint).
    await sdkLog(h, run.id, { points: [{ key: "loss", step: 5000, value: 7 }] });
    restart();
    const rewritten = await query();
    const full = await allPoints(h, run.id, "loss", 5000);
    assertEquals(full.values[5000], 7);
    assertEquals(full.steps, points.map((p) => p.step));
    assertEquals(rewritten.steps.length, 500);
  });
});

Deno.test("a full disk gets a 507 that stores nothing, and the same batch sent again is stored once", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const points = Array.from({ length: 3000 }, (_, step) => ({ key: "loss", step, value: step }));
    const sqlite = h.ctx.db.sqlite;
    const pages = (sqlite.prepare("PRAGMA page_count").get() as { page_count: number }).page_count;
    sqlite.exec(`PRAGMA max_page_count = ${pages}`);
    const refused = await sdkLog(h, run.id, { points });
    assertEquals([refused.status, refused.json.error.code], [507, "StorageFull"]);
    const keys = await h.call("GET", `/api/runs/${run.id}/metrics`);
    assertEquals(keys.json.keys, [], "nothing of the batch was written");
    sqlite.exec("PRAGMA max_page_count = 1073741823");
    const accepted = await sdkLog(h, run.id, { points });
    assertEquals(accepted.status, 200);
    const q = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [run.id], keys: ["loss"], max_points: 3000 },
    });
    assertEquals([q.json.series[0].steps.length, q.json.series[0].downsampled], [3000, false]);
  });
});

Deno.test("metrics:query answers at most 2,000 points a series by default and says it downsampled", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const points = Array.from({ length: 5000 }, (_, i) => ({ key: "loss", step: i, value: i }));
    await sdkLog(h, run.id, { points: [...points, { key: "acc", step: 0, value: 1 }] });
    const q = await h.call("POST", "/api/runs/metrics:query", {
      token: h.tokens.read,
      body: { runs: [run.id], keys: ["loss", "acc"] },
    });
    assertEquals(q.status, 200);
    assertEquals(q.json.max_points, 2000);
    const [loss, acc] = q.json.series;
    assertEquals([loss.steps.length, loss.total_points, loss.downsampled], [2000, 5000, true]);
    assertEquals([acc.steps, acc.downsampled], [[0], false]);
    assertEquals(q.json.missing, []);
  });
});

Deno.test("metrics:query removes duplicate runs and keys, and refuses more series than its cap", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    await sdkLog(h, run.id, { points: [{ key: "loss", step: 0, value: 1 }] });
    const dup = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: Array(200).fill(run.id), keys: Array(200).fill("loss") },
    });
    assertEquals(dup.status, 200);
    assertEquals(dup.json.series.map((s: { key: string }) => s.key), ["loss"]);
    const runs = Array.from({ length: 11 }, (_, i) => `r-many${i}`);
    const keys = Array.from({ length: 10 }, (_, i) => `k${i}`);
    const tooMany = await h.call("POST", "/api/runs/metrics:query", { body: { runs, keys } });
    assertEquals(tooMany.status, 400);
    assertStringIncludes(tooMany.json.error.message, "keys: 11 runs × 10 keys = 110 series");
    assertStringIncludes(tooMany.json.error.message, "at most 100 per query");
    const tooManyPoints = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: runs.slice(0, 10), keys: ["loss"], max_points: 100_001 },
    });
    assertEquals(tooManyPoints.status, 400);
    assertStringIncludes(tooManyPoints.json.error.message, "max_points");
    const big = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: runs.slice(0, 10), keys: keys.slice(0, 2), max_points: 100_000 },
    });
    assertEquals(big.status, 400);
    assertStringIncludes(big.json.error.message, "20 series × 100000 points = 2000000");
  });
});

Deno.test("metrics/points pages a whole series exactly, from sealed blocks and rows alike", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const n = 2 * BLOCK_POINTS + 777;
    const points = Array.from({ length: n }, (_, i) => ({
      key: "loss",
      step: 3 * i,
      value: i === 10 ? "NaN" : i / 7,
    }));
    await sdkLog(h, run.id, { points });
    const fromRows = await allPoints(h, run.id, "loss", 3000);
    assertEquals(fromRows.steps, points.map((p) => p.step));
    assertEquals(fromRows.values, points.map((p) => p.value));
    assertEquals(fromRows.pages, 3);
    const sealer = new BlockSealer(h.ctx);
    while (sealer.runOnce() > 0) { /* until every whole block is sealed */ }
    const fromBlocks = await allPoints(h, run.id, "loss", 5000);
    assertEquals(fromBlocks.steps, fromRows.steps);
    assertEquals(fromBlocks.values, fromRows.values);
    const missing = await h.call("GET", `/api/runs/${run.id}/metrics/points?key=nope`);
    assertEquals(missing.status, 404);
    const bad = await h.call("GET", `/api/runs/${run.id}/metrics/points?key=loss&cursor=x`);
    assertEquals(bad.status, 400);
    assertStringIncludes(bad.json.error.message, "cursor");
  });
});

Deno.test("metrics:query range limits steps, and wall times with x: wall, before downsampling", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const points = Array.from({ length: 3000 }, (_, i) => ({
      key: "loss",
      step: i,
      value: i,
      wall_time: 1_000 + i / 10,
    }));
    await sdkLog(h, run.id, { points });
    const query = (body: Record<string, unknown>) =>
      h.call("POST", "/api/runs/metrics:query", {
        body: { runs: [run.id], keys: ["loss"], ...body },
      });
    for (const cached of [false, true]) {
      if (!cached) h.ctx.series = undefined; // straight from the store
      const steps = (await query({ range: [100, 2599] })).json.series[0];
      assertEquals([steps.total_points, steps.downsampled, steps.steps[0]], [2500, true, 100]);
      assertEquals(steps.steps.at(-1), 2599);
      const wall = (await query({ range: [1_010, 1_019.95], x: "wall" })).json.series[0];
      assertEquals(wall.steps, Array.from({ length: 100 }, (_, i) => 100 + i));
      h.ctx.series = new SeriesCache();
      await query({}); // now held in memory
    }
    const reversed = await query({ range: [5, 1] });
    assertEquals(reversed.status, 400);
    assertStringIncludes(reversed.json.error.message, "range: from 5 is after to 1");
  });
});

Deno.test("a run's metric summary: latest, best by the key's direction, and the trend; sys/ keys last", async () => {
  await withHarness(async (h) => {
    const run = await sdkRun(h);
    const points = [];
    for (let step = 1; step <= 40; step++) {
      points.push({ key: "train/loss", step, value: 2 / step });
      points.push({ key: "eval/accuracy", step, value: 0.5 });
      points.push({ key: "sys/gpu_util", step, value: 90 });
    }
    assertEquals((await sdkLog(h, run.id, { points })).status, 200);
    const res = await h.call("GET", `/api/runs/${run.id}/metric-summary`, { token: h.tokens.read });
    assertEquals(res.status, 200, res.text);
    const rows = res.json.items;
    assertEquals(rows.map((r: { key: string }) => r.key), [
      "eval/accuracy",
      "train/loss",
      "sys/gpu_util",
    ]);
    const loss = rows[1];
    assertEquals([loss.direction, loss.best, loss.best_step, loss.latest_step, loss.trend], [
      "min",
      0.05,
      40,
      40,
      "improving",
    ]);
    assertEquals([rows[0].direction, rows[0].best, rows[0].trend], ["max", 0.5, "flat"]);
    assertEquals(
      (await h.call("GET", "/api/runs/r-none/metric-summary", { token: h.tokens.read })).status,
      404,
    );
  });
});
