import { assert, assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import type { EventRecord } from "../../protocol/objects.ts";
import { aRun, aWindow } from "./_fixtures.ts";
import { diagnoseRun, type RunDiagnosisInput } from "./diagnose_run.ts";

const T0 = 1_700_000_000;
const loss = Array.from({ length: 100 }, (_, i) => 2 / (1 + i / 20));

function input(over: Partial<RunDiagnosisInput> = {}): RunDiagnosisInput {
  const window = aWindow("train/loss", loss, { firstStep: 400, t0: T0, secondsPerStep: 0.5 });
  return {
    run: aRun({
      step: 499,
      max_steps: 1000,
      primary_metric: {
        key: "train/loss",
        direction: "min",
        latest: loss[99],
        best: loss[99],
        best_step: 499,
      },
    }),
    now: new Date((T0 + 99 * 0.5 + 1) * 1000),
    primary_window: window,
    activity_window: window,
    gpu_windows: [],
    events: [],
    failure: null,
    checkpoints: 0,
    sibling_run_ids: [],
    ...over,
  };
}

const event = (id: number, type: string, message: string): EventRecord => ({
  id,
  ts: new Date(T0 * 1000).toISOString(),
  type,
  severity: "critical",
  run_id: "r-1",
  job_id: "j-1",
  node_id: null,
  message,
  data: {},
});

Deno.test("diagnoseRun() gives rate, ETA and progress of a running run", () => {
  const d = diagnoseRun(input());
  assertEquals(d.rate?.steps_per_s, 2);
  assertEquals(d.progress.fraction, 0.499);
  assertEquals(d.eta?.remaining_steps, 501);
  assertEquals(d.eta?.seconds, 250.5);
  assertEquals(d.primary_metric?.trend.verdict, "improving");
  assertStringIncludes(d.summary, "at step 499 of 1000 (50%), 2 steps/s, about 4m 11s left");
  assertEquals(d.next_actions.map((a) => a.tool), ["wait_for_run"]);
});

Deno.test("diagnoseRun() has no ETA without max_steps or once the run ended", () => {
  const base = input();
  assertEquals(diagnoseRun(input({ run: { ...base.run, max_steps: null } })).eta, null);
  assertEquals(diagnoseRun(input({ run: { ...base.run, status: "SUCCEEDED" } })).eta, null);
});

Deno.test("diagnoseRun() groups anomaly events by type and suggests cancelling a NaN run", () => {
  const d = diagnoseRun(input({
    events: [
      event(3, "LOSS_SPIKE", 'Loss "train/loss" spiked to 9 at step 480'),
      event(2, "LOSS_NAN", 'Loss "train/loss" is NaN at step 470'),
      event(1, "LOSS_SPIKE", 'Loss "train/loss" spiked to 7 at step 450'),
      { ...event(0, "RUN_STARTED", "started"), severity: "info" },
    ],
  }));
  assertEquals(d.anomalies.map((a) => [a.type, a.count, a.source]), [
    ["LOSS_SPIKE", 2, "event"],
    ["LOSS_NAN", 1, "event"],
  ]);
  assertEquals(d.anomalies[0].message, 'Loss "train/loss" spiked to 9 at step 480');
  assertEquals(d.recent_events.length, 4);
  assertStringIncludes(d.summary, "LOSS_NAN");
  assertEquals(d.next_actions.map((a) => a.tool), ["cancel_job", "get_logs", "wait_for_run"]);
  assertEquals(d.next_actions[0].args, { job_id: "j-1" });
});

Deno.test("diagnoseRun() sees a NaN latest value and a silent run without events", () => {
  const w = aWindow("train/loss", [...loss.slice(0, 99), NaN], { t0: T0, secondsPerStep: 0.5 });
  const d = diagnoseRun(input({
    primary_window: w,
    activity_window: w,
    now: new Date((T0 + 50 + 3600) * 1000),
  }));
  assertEquals(d.anomalies.map((a) => [a.type, a.source]), [
    ["LOSS_NAN", "observed"],
    ["STALLED", "observed"],
  ]);
  assertEquals(d.primary_metric?.latest, "NaN");
});

Deno.test("diagnoseRun() averages GPU utilisation per GPU and overall", () => {
  const d = diagnoseRun(input({
    gpu_windows: [{ index: 0, values: [90, 100] }, { index: 1, values: [10, NaN, 30] }],
  }));
  assertEquals(d.gpu, {
    mean_util: 57.5,
    gpus: [{ index: 0, latest: 100, mean: 95 }, { index: 1, latest: 30, mean: 20 }],
  });
  assertStringIncludes(d.summary, "GPU utilisation averages 58% over 2 GPUs");
});

Deno.test("diagnoseRun() of a failed run carries the failure and points to explain_failure", () => {
  const base = input();
  const d = diagnoseRun(input({
    run: { ...base.run, status: "FAILED" },
    failure: {
      likely_cause: "The GPU ran out of memory",
      confidence: 0.97,
      evidence: [],
      suggested_fixes: [],
      retry_advice: "Change the configuration first.",
      retry: "fails_again",
      cause_id: "cuda_oom",
    },
  }));
  assertEquals(d.failure?.cause_id, "cuda_oom");
  assertStringIncludes(d.summary, "The GPU ran out of memory");
  assertEquals(d.next_actions.map((a) => a.tool), ["explain_failure", "get_logs"]);
});

Deno.test("diagnoseRun() of a finished run points to its checkpoints and sibling runs", () => {
  const base = input();
  const d = diagnoseRun(input({
    run: { ...base.run, status: "SUCCEEDED" },
    checkpoints: 3,
    sibling_run_ids: ["r-2", "r-3"],
  }));
  assertEquals(d.next_actions.map((a) => a.tool), [
    "get_best_checkpoint",
    "compare_checkpoints",
    "compare_runs",
  ]);
  assertEquals(d.next_actions[2].args, { runs: ["r-1", "r-2", "r-3"] });
});

Deno.test("diagnoseRun() of a run with no metrics says so", () => {
  const d = diagnoseRun(input({
    run: aRun(),
    primary_window: null,
    activity_window: null,
  }));
  assert(d.rate === null && d.eta === null && d.last_activity === null);
  assertStringIncludes(d.summary, "No primary metric");
});

Deno.test("diagnoseRun() keeps steps/s and ETA on one axis when keys count epochs and iterations", () => {
  // Keras: epoch_loss by epoch (0..9, one a minute) next to *_vs_iterations every 1500
  // iterations; the run's step counter is the iteration.
  const epochs = aWindow("validation/epoch_loss", [
    0.3,
    0.2,
    0.15,
    0.1,
    0.09,
    0.08,
    0.08,
    0.07,
    0.07,
    0.07,
  ], {
    t0: T0,
    secondsPerStep: 60,
  });
  const iterations = aWindow(
    "validation/evaluation_loss_vs_iterations",
    Array.from({ length: 10 }, (_, i) => 0.3 - i * 0.02),
    { firstStep: 1500, every: 1500, t0: T0 + 60, secondsPerStep: 0.04 },
  );
  const base = input();
  const run = {
    ...base.run,
    step: 15000,
    max_steps: 30000,
    primary_metric: { ...base.run.primary_metric!, key: "validation/epoch_loss" },
  };
  const d = diagnoseRun(input({ run, primary_window: epochs, activity_window: iterations }));
  assertEquals(d.rate?.key, "validation/evaluation_loss_vs_iterations");
  assertEquals(d.rate?.steps_per_s, 25);
  assertEquals(d.eta?.remaining_steps, 15000);
  assertEquals(d.eta?.seconds, 600);
  // No key on the run's axis: the primary's own rate, named, and no ETA.
  const other = diagnoseRun(input({ run, primary_window: epochs, activity_window: epochs }));
  assertEquals(other.eta, null);
  assertEquals(other.rate?.key, "validation/epoch_loss");
  assertStringIncludes(other.summary, "at step 15000 of 30000 (50%), 0.01667 steps/s of");
});
