/** Event rules wired to ingest: points posted through the API raise each anomaly once. */
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness, type Harness } from "./_harness.ts";
import { TFEVENTS } from "./fixtures/mod.ts";
import { RulesEngine } from "../server/rules/engine.ts";
import { resolveRulesConfig } from "../server/rules/mod.ts";

const FIXTURE = new URL("expected-scalars.jsonl", TFEVENTS);

async function withEngine(
  fn: (h: Harness, engine: RulesEngine) => Promise<void>,
  now?: () => Date,
) {
  const h = await createHarness({ now });
  const engine = new RulesEngine(h.ctx, {
    config: resolveRulesConfig({}),
    timerIntervalMs: 3_600_000,
  });
  engine.start();
  try {
    await fn(h, engine);
  } finally {
    engine.stop();
    await h.close();
  }
}

async function events(h: Harness, runId: string, type: string) {
  return (await h.call("GET", `/api/events?run_id=${runId}&type=${type}`)).json.items;
}

Deno.test("a NaN loss raises LOSS_NAN once per run and key", async () => {
  await withEngine(async (h) => {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const log = (points: unknown[]) =>
      h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { points } });
    await log([{ key: "train/loss", step: 1, value: 1 }, {
      key: "train/loss",
      step: 2,
      value: "NaN",
    }]);
    await log([{ key: "train/loss", step: 3, value: "NaN" }, {
      key: "train/loss",
      step: 4,
      value: "Infinity",
    }]);
    const nan = await events(h, run.id, "LOSS_NAN");
    assertEquals(nan.length, 1);
    assertEquals(nan[0].severity, "critical");
    assertStringIncludes(nan[0].message, "train/loss");
  });
});

Deno.test("the real Keras run raises OVERFITTING_SUSPECTED once, after its last epoch (9)", async () => {
  await withEngine(async (h) => {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    const rows = (await Deno.readTextFile(FIXTURE)).trim().split("\n").map((l) => JSON.parse(l))
      .filter((r) => r.file.startsWith("keras-exp0/") && r.tag === "epoch_loss");
    for (let epoch = 0; epoch < 10; epoch++) {
      const points = rows.filter((r) => r.step === epoch).map((r) => ({
        key: `${r.file.split("/")[1]}/epoch_loss`,
        step: r.step,
        value: r.value,
        wall_time: r.wall_time,
      }));
      await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: { points } });
      const fired = await events(h, run.id, "OVERFITTING_SUSPECTED");
      assertEquals(fired.length, epoch < 9 ? 0 : 1, `after epoch ${epoch}`);
    }
  });
});

Deno.test("after a restart, rule state is rebuilt from the store and old anomalies are not raised again", async () => {
  await withEngine(async (h, engine) => {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, {
      body: { points: [{ key: "loss", step: 1, value: "NaN" }] },
    });
    assertEquals((await events(h, run.id, "LOSS_NAN")).length, 1);
    engine.stop();
    const fresh = new RulesEngine(h.ctx, {
      config: resolveRulesConfig({}),
      timerIntervalMs: 3_600_000,
    });
    fresh.start();
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, {
      body: { points: [{ key: "loss", step: 2, value: "NaN" }] },
    });
    fresh.stop();
    assertEquals((await events(h, run.id, "LOSS_NAN")).length, 1);
  });
});

Deno.test("a running run silent for 15 minutes is STALLED, once", async () => {
  let now = new Date("2026-01-01T00:00:00Z");
  await withEngine(async (h, engine) => {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "p" } })).json;
    await h.call("POST", `/api/sdk/runs/${run.id}/log`, {
      body: { points: [{ key: "loss", step: 1, value: 1, wall_time: now.getTime() / 1000 }] },
    });
    now = new Date(now.getTime() + 10 * 60_000);
    assertEquals(engine.runOnce(), 0);
    now = new Date(now.getTime() + 6 * 60_000);
    assertEquals(engine.runOnce(), 1);
    assertEquals(engine.runOnce(), 0);
    const stalled = await events(h, run.id, "STALLED");
    assertEquals(stalled.length, 1);
  }, () => now);
});
