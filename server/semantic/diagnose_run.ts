/**
 * `diagnoseRun`: a run's health — progress, step rate and ETA on its own step axis, the
 * primary metric's trend, anomalies, GPU use, the cause of a failure — and next actions.
 */
import type {
  EventRecord,
  NextAction,
  Run,
  RunAnomaly,
  RunDiagnosis,
} from "../../protocol/objects.ts";
import { ANOMALY_EVENT_TYPES as ANOMALY_TYPES } from "../../protocol/event_types.ts";
import type { Diagnosis } from "../failure/mod.ts";
import { isLossKey, STALLED_AFTER_S } from "../rules/mod.ts";
import { act, fmt, fmtDuration, jsonMetric } from "./_format.ts";
import { metricTrend, type SeriesWindow, stepRate } from "./trend.ts";

/** Event types that are anomalies of a run, not its lifecycle. */
export const ANOMALY_EVENT_TYPES: ReadonlySet<string> = new Set(ANOMALY_TYPES);

/** How many recent events a diagnosis lists. */
export const RECENT_EVENTS_SHOWN = 10;

/** Everything `diagnoseRun` looks at, loaded by the caller. */
export interface RunDiagnosisInput {
  /** The run with its primary metric resolved. */
  run: Run;
  now: Date;
  /** The newest points of the primary metric, oldest first; null when the run has none. */
  primary_window: SeriesWindow | null;
  /** The newest points of the key written last, for the rate when the primary has too few. */
  activity_window: SeriesWindow | null;
  /** Recent `sys/gpu{i}/util` samples per GPU, oldest first. */
  gpu_windows: { index: number; values: number[] }[];
  /** The run's recent events, newest first. */
  events: EventRecord[];
  /** The failure diagnosis of a FAILED or LOST run. */
  failure: Diagnosis | null;
  checkpoints: number;
  /** Other runs of the same experiment, newest first. */
  sibling_run_ids: string[];
}

const ACTIVE = new Set(["QUEUED", "RUNNING"]);

/** The health of a run: progress, rate, ETA, trend, anomalies, GPU use, failure, next steps. */
export function diagnoseRun(input: RunDiagnosisInput): RunDiagnosis {
  const { run, now } = input;
  const step = run.step;
  const { rate, onRunAxis } = rateOf(input.primary_window, input.activity_window, step);
  const progress = {
    step,
    epoch: run.epoch,
    max_steps: run.max_steps,
    fraction: run.max_steps && step !== null ? Math.min(1, step / run.max_steps) : null,
  };
  const eta = run.status === "RUNNING" && run.max_steps && step !== null && rate && onRunAxis
    ? etaOf(run.max_steps - step, rate.steps_per_s, now)
    : null;
  const lastWall = Math.max(
    ...[input.primary_window, input.activity_window].map((w) => w?.wall_times.at(-1) ?? -1),
  );
  const lastActivity = lastWall > 0
    ? {
      at: new Date(lastWall * 1000).toISOString(),
      seconds_ago: Math.max(0, now.getTime() / 1000 - lastWall),
    }
    : null;
  const pm = run.primary_metric;
  const primary = pm
    ? {
      key: pm.key,
      direction: pm.direction,
      latest: lastValue(input.primary_window) ?? pm.latest,
      best: pm.best,
      best_step: pm.best_step,
      trend: input.primary_window
        ? metricTrend(
          input.primary_window,
          pm.direction,
          pm.best === null ? null : { value: pm.best, step: pm.best_step },
        )
        : metricTrend({ key: pm.key, steps: [], values: [], wall_times: [] }, pm.direction),
    }
    : null;
  const anomalies = anomaliesOf(input, lastActivity?.seconds_ago ?? null);
  const gpu = gpuOf(input.gpu_windows);
  const failure = input.failure
    ? {
      likely_cause: input.failure.likely_cause,
      confidence: input.failure.confidence,
      cause_id: input.failure.cause_id,
      retry_advice: input.failure.retry_advice,
    }
    : null;
  const diagnosis: Omit<RunDiagnosis, "summary" | "next_actions"> = {
    run_id: run.id,
    name: run.name,
    project: run.project,
    experiment: run.experiment,
    job_id: run.job_id,
    status: run.status,
    progress,
    rate,
    eta,
    last_activity: lastActivity,
    primary_metric: primary,
    anomalies,
    recent_events: input.events.slice(0, RECENT_EVENTS_SHOWN).map((e) => ({
      id: e.id,
      ts: e.ts,
      type: e.type,
      severity: e.severity,
      message: e.message,
    })),
    gpu,
    failure,
  };
  return {
    ...diagnosis,
    summary: summaryOf(diagnosis, onRunAxis),
    next_actions: nextActions(input, anomalies),
  };
}

/**
 * Steps per second on the run's own step axis: of the primary metric, else of the key written
 * last, whichever counts the same steps as the run (its newest step is the run's step). Keras
 * writes `epoch_loss` by epoch next to `evaluation_loss_vs_iterations` by iteration, so a rate
 * in epochs/s must never meet a step count in iterations. When no window is on the run's axis
 * the primary metric's own rate is given (its key names the axis) and there is no ETA.
 */
function rateOf(
  primary: SeriesWindow | null,
  activity: SeriesWindow | null,
  runStep: number | null,
): { rate: RunDiagnosis["rate"]; onRunAxis: boolean } {
  const windows = [primary, activity].filter((w): w is SeriesWindow => w !== null);
  for (const w of windows) {
    const rate = w.steps.at(-1) === runStep ? stepRate(w) : null;
    if (rate) return { rate, onRunAxis: true };
  }
  for (const w of windows) {
    const rate = stepRate(w);
    if (rate) return { rate, onRunAxis: false };
  }
  return { rate: null, onRunAxis: false };
}

function etaOf(remaining: number, stepsPerS: number, now: Date) {
  const left = Math.max(0, remaining);
  const seconds = left / stepsPerS;
  return {
    remaining_steps: left,
    seconds,
    at: new Date(now.getTime() + seconds * 1000).toISOString(),
  };
}

function lastValue(w: SeriesWindow | null) {
  const v = w?.values.at(-1);
  return v === undefined ? null : jsonMetric(v);
}

function anomaliesOf(input: RunDiagnosisInput, silentS: number | null): RunAnomaly[] {
  const byType = new Map<string, RunAnomaly>();
  // Events come newest first, so the first of a type carries the latest message.
  for (const e of input.events) {
    if (!ANOMALY_EVENT_TYPES.has(e.type)) continue;
    const seen = byType.get(e.type);
    if (seen) seen.count++;
    else {
      byType.set(e.type, {
        type: e.type,
        severity: e.severity,
        count: 1,
        last_at: e.ts,
        message: e.message,
        source: "event",
      });
    }
  }
  const w = input.primary_window;
  const last = w?.values.at(-1);
  if (w && last !== undefined && !Number.isFinite(last)) {
    const type = isLossKey(w.key) ? "LOSS_NAN" : "METRIC_NOT_FINITE";
    if (!byType.has(type)) {
      byType.set(type, {
        type,
        severity: "critical",
        count: 1,
        last_at: new Date(w.wall_times.at(-1)! * 1000).toISOString(),
        message: `"${w.key}" is ${jsonMetric(last)} at step ${w.steps.at(-1)}`,
        source: "observed",
      });
    }
  }
  if (
    input.run.status === "RUNNING" && silentS !== null && silentS > STALLED_AFTER_S &&
    !byType.has("STALLED")
  ) {
    byType.set("STALLED", {
      type: "STALLED",
      severity: "warning",
      count: 1,
      last_at: null,
      message: `No metric point for ${fmtDuration(silentS)} (stalled after ${
        fmtDuration(STALLED_AFTER_S)
      })`,
      source: "observed",
    });
  }
  return [...byType.values()];
}

function gpuOf(windows: RunDiagnosisInput["gpu_windows"]): RunDiagnosis["gpu"] {
  const gpus = windows.flatMap((w) => {
    const finite = w.values.filter(Number.isFinite);
    if (finite.length === 0) return [];
    const last = w.values.at(-1)!;
    return [{
      index: w.index,
      latest: Number.isFinite(last) ? last : null,
      mean: finite.reduce((a, b) => a + b, 0) / finite.length,
    }];
  });
  if (gpus.length === 0) return null;
  return { mean_util: gpus.reduce((a, g) => a + g.mean, 0) / gpus.length, gpus };
}

function summaryOf(
  d: Omit<RunDiagnosis, "summary" | "next_actions">,
  rateOnRunAxis: boolean,
): string {
  const parts: string[] = [];
  const p = d.progress;
  let where = `Run "${d.name}" (${d.run_id}) is ${d.status}`;
  if (p.step !== null) {
    where += ` at step ${p.step}` +
      (p.max_steps ? ` of ${p.max_steps} (${Math.round((p.fraction ?? 0) * 100)}%)` : "");
  }
  if (d.rate) {
    // Off the run's axis, the rate's key says which steps it counts.
    where += `, ${fmt(d.rate.steps_per_s)} steps/s` +
      (rateOnRunAxis ? "" : ` of "${d.rate.key}"`);
  }
  if (d.eta) where += `, about ${fmtDuration(d.eta.seconds)} left (ETA ${d.eta.at})`;
  parts.push(where + ".");
  const m = d.primary_metric;
  if (m) {
    parts.push(
      `Primary metric "${m.key}" (${m.direction === "min" ? "lower" : "higher"} is better): ` +
        `latest ${typeof m.latest === "number" ? fmt(m.latest) : m.latest ?? "n/a"}, best ` +
        `${fmt(m.best)}${m.best_step === null ? "" : ` at step ${m.best_step}`}; ` +
        (m.trend.verdict === "unknown" ? "no trend yet: " : "") + `${m.trend.explanation}.`,
    );
  } else {
    parts.push("No primary metric: the run has no loss-like key and none is defined.");
  }
  if (d.anomalies.length) {
    parts.push(
      `Anomalies: ${
        d.anomalies.map((a) => `${a.type}${a.count > 1 ? ` ×${a.count}` : ""} (${a.message})`)
          .join("; ")
      }.`,
    );
  } else {
    parts.push("No anomalies recorded.");
  }
  if (d.gpu) {
    parts.push(
      `GPU utilisation averages ${Math.round(d.gpu.mean_util)}% over ${d.gpu.gpus.length} GPU${
        d.gpu.gpus.length === 1 ? "" : "s"
      }.`,
    );
  }
  if (d.failure) {
    parts.push(
      `Failure: ${d.failure.likely_cause} (confidence ${d.failure.confidence}). ` +
        d.failure.retry_advice,
    );
  }
  return parts.join(" ");
}

function nextActions(input: RunDiagnosisInput, anomalies: RunAnomaly[]): NextAction[] {
  const run = input.run;
  const out: NextAction[] = [];
  const types = new Set(anomalies.map((a) => a.type));
  if (ACTIVE.has(run.status)) {
    if (run.job_id && (types.has("LOSS_NAN") || types.has("METRIC_NOT_FINITE"))) {
      out.push(act(
        "cancel_job",
        { job_id: run.job_id },
        "The metric went NaN/Inf: training rarely recovers, and every further step costs GPU time",
      ));
    }
    if (anomalies.length) {
      out.push(act("get_logs", { run_id: run.id }, "Read the log around the anomalies"));
    }
    out.push(act(
      "wait_for_run",
      { run_id: run.id },
      "Wait for the run to finish (woken early by any anomaly) instead of polling the diagnosis",
    ));
    return out;
  }
  if (run.status === "FAILED" || run.status === "LOST") {
    out.push(act(
      "explain_failure",
      { run_id: run.id },
      "Get the likely cause with log evidence, fixes and retry advice",
    ));
    out.push(act("get_logs", { run_id: run.id }, "Read the end of the log yourself"));
    return out;
  }
  if (input.checkpoints > 0) {
    out.push(act(
      "get_best_checkpoint",
      { run_id: run.id },
      `Pick the best of its ${input.checkpoints} checkpoint${input.checkpoints === 1 ? "" : "s"}`,
    ));
  }
  if (input.checkpoints > 1) {
    out.push(act("compare_checkpoints", { run_id: run.id }, "See every checkpoint ranked"));
  }
  if (input.sibling_run_ids.length) {
    out.push(act(
      "compare_runs",
      { runs: [run.id, ...input.sibling_run_ids.slice(0, 4)] },
      "Compare it with the newest other runs of its experiment",
    ));
  }
  return out;
}
