import assert from "node:assert/strict";
import {
  DEFAULT_RULES_CONFIG,
  GPU_UNDERUTILIZED_PCT,
  LOSS_SPIKE_WINDOW,
  resolveRulesConfig,
  STALLED_AFTER_S,
} from "./rules_config.ts";

Deno.test("resolveRulesConfig() fills every field from the named defaults", () => {
  const cfg = resolveRulesConfig();
  assert.deepEqual(cfg, DEFAULT_RULES_CONFIG);
  assert.equal(cfg.lossSpikeWindow, LOSS_SPIKE_WINDOW);
  assert.equal(cfg.gpuUnderutilizedPct, GPU_UNDERUTILIZED_PCT);
  assert.equal(cfg.stalledAfterS, STALLED_AFTER_S);
  assert.deepEqual(
    { ...cfg },
    {
      lossSpikeWindow: 50,
      lossSpikeMadFactor: 10,
      lossSpikeMinRise: 0.5,
      lossSpikeMinPoints: 20,
      lossSpikeCooldownSteps: 200,
      overfittingMinRise: 0.05,
      overfittingWindow: 3,
      overfittingMinRisen: 2,
      gpuUnderutilizedPct: 20,
      gpuUnderutilizedWindowS: 300,
      gpuUnderutilizedWarmupS: 180,
      gpuUnderutilizedCooldownS: 1800,
      stalledAfterS: 900,
    },
  );
});

Deno.test("resolveRulesConfig() keeps the fields given and defaults the rest", () => {
  const cfg = resolveRulesConfig({ stalledAfterS: 60, gpuUnderutilizedPct: 5 });
  assert.equal(cfg.stalledAfterS, 60);
  assert.equal(cfg.gpuUnderutilizedPct, 5);
  assert.equal(cfg.lossSpikeWindow, 50);
});

Deno.test("resolveRulesConfig() rejects bad values with an error naming the field", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ stalledAfterS: -1 }, /"stalledAfterS": expected a non-negative number, got -1/],
    [{ gpuUnderutilizedPct: Number.NaN }, /"gpuUnderutilizedPct"/],
    [{ lossSpikeWindow: "50" }, /"lossSpikeWindow": expected a non-negative number, got "50"/],
    [{ overfittingWindow: 2.5 }, /"overfittingWindow": expected an integer of at least 1/],
    [{ lossSpikeMinPoints: 60 }, /"lossSpikeMinPoints": 60 exceeds lossSpikeWindow 50/],
    [{ overfittingMinRisen: 4 }, /"overfittingMinRisen": 4 exceeds overfittingWindow 3/],
  ];
  for (const [partial, message] of cases) {
    assert.throws(() => resolveRulesConfig(partial), message, JSON.stringify(partial));
  }
});
