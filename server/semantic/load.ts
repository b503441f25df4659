/**
 * Loads the plain facts the semantic decisions need from the store. Thin on purpose: no
 * judgement here, only reads and reshaping; the decisions live in the pure modules beside it.
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { Checkpoint, Run } from "../../protocol/objects.ts";
import {
  checkpoints as checkpointsDb,
  events as eventsDb,
  jobs as jobsDb,
  logs as logsDb,
  metrics as metricsDb,
  projects as projectsDb,
  runs as runsDb,
} from "../db/mod.ts";
import type { KeySummary } from "../db/metrics.ts";
import type { StoredRun } from "../db/runs.ts";
import type { Context } from "../context.ts";
import { evaluationsByCheckpoint, metricNumber } from "../evaluations/mod.ts";
import type { FailureInput } from "../failure/mod.ts";
import { notFound } from "../errors.ts";
import { resolvePrimaryKey } from "../metrics/primary_metric.ts";
import { getRun } from "../runs/service.ts";
import type { CheckpointCandidate, RankingInput } from "./rank_checkpoints.ts";
import { keyDirections } from "./metric_direction.ts";
import type { SeriesWindow } from "./trend.ts";

/** Points read for a trend window (more than the trend uses, so NaNs do not starve it). */
export const WINDOW_READ_POINTS = 100;
/** Log lines handed to the failure diagnosis. */
export const FAILURE_LOG_LINES = 200;
/** Events of a run read for a diagnosis. */
export const EVENTS_READ = 200;
/** The most runs of one experiment a recommendation looks at. */
export const MAX_EXPERIMENT_RUNS = 2000;

const GPU_UTIL_KEY = /^sys\/gpu(\d+)\/util$/;

/**
 * The newest `n` points of a key. Reads a step range sized from the key's density and widens
 * it when steps are uneven, so a long series is never read whole for a short window.
 */
export function recentWindow(
  ctx: Context,
  runId: string,
  s: KeySummary,
  n = WINDOW_READ_POINTS,
): SeriesWindow {
  const take = (w: ReturnType<typeof metricsDb.readSeries>): SeriesWindow => ({
    key: s.key,
    steps: w.steps.slice(-n),
    values: w.values.slice(-n),
    wall_times: w.wall_times.slice(-n),
  });
  if (s.points <= n) return take(metricsDb.readSeries(ctx.db, runId, s.key));
  let span = Math.ceil(((s.last_step - s.first_step + 1) * n / s.points) * 1.5);
  for (let tries = 0; tries < 4; tries++, span *= 4) {
    const from = s.last_step - span;
    if (from <= s.first_step) break;
    const w = metricsDb.readSeries(ctx.db, runId, s.key, {
      column: "step",
      from,
      to: s.last_step,
    });
    if (w.steps.length >= n) return take(w);
  }
  return take(metricsDb.readSeries(ctx.db, runId, s.key));
}

/** A run with its primary metric; 404 when it does not exist. */
export function loadRun(ctx: Context, id: string): Run {
  return getRun(ctx, id);
}

/** The run's events, newest first. */
export function loadEvents(ctx: Context, runId: string) {
  return eventsDb.listEvents(ctx.db, { run_id: runId }, EVENTS_READ).items;
}

/** The series windows of a diagnosis: the primary metric, the key written last, GPU util. */
export function loadWindows(ctx: Context, run: Run) {
  const keys = metricsDb.listKeySummaries(ctx.db, run.id);
  const primary = run.primary_metric
    ? keys.find((k) => k.key === run.primary_metric!.key) ?? null
    : null;
  const newest = keys.filter((k) => !k.key.startsWith("sys/"))
    .reduce<KeySummary | null>(
      (a, k) => (a === null || k.last_wall_time > a.last_wall_time ? k : a),
      null,
    );
  const primaryWindow = primary ? recentWindow(ctx, run.id, primary) : null;
  const activityWindow = newest === null
    ? null
    : newest.key === primary?.key
    ? primaryWindow
    : recentWindow(ctx, run.id, newest, 50);
  const gpuWindows = keys.flatMap((k) => {
    const m = GPU_UTIL_KEY.exec(k.key);
    return m ? [{ index: Number(m[1]), values: recentWindow(ctx, run.id, k, 60).values }] : [];
  });
  return { primaryWindow, activityWindow, gpuWindows };
}

/** Other runs of the run's experiment, newest first (none for a run outside an experiment). */
export function loadSiblingRunIds(ctx: Context, run: Run, limit = 5): string[] {
  if (!run.experiment) return [];
  return runsDb.listRuns(ctx.db, { project: run.project, experiment: run.experiment }, limit + 1)
    .items.filter((r) => r.id !== run.id).slice(0, limit).map((r) => r.id);
}

const END_EVENTS = new Set(["RUN_FAILED", "RUN_LOST", "RUN_CANCELLED", "RUN_SUCCEEDED"]);

/**
 * The input of `diagnoseFailure` for a run: the exit code, signal and failure class of its own
 * attempt (from its end event, else from its job while the job is still at that attempt), its
 * events, oldest first, and the last `FAILURE_LOG_LINES` log lines.
 */
export function loadFailureInput(
  ctx: Context,
  run: Run,
  eventsNewestFirst = loadEvents(ctx, run.id),
): FailureInput {
  const end = eventsNewestFirst.find((e) => END_EVENTS.has(e.type))?.data as
    | { exit_code?: number | null; signal?: string | null; failure_class?: string | null }
    | undefined;
  const job = run.job_id ? jobsDb.getJob(ctx.db, run.job_id) : null;
  const sameAttempt = job && job.attempt === run.attempt ? job : null;
  return {
    status: run.status,
    exit_code: end?.exit_code ?? sameAttempt?.exit_code ?? null,
    signal: end?.signal ?? sameAttempt?.signal ?? null,
    failure_class: end?.failure_class ?? sameAttempt?.failure_class ?? null,
    events: [...eventsNewestFirst].reverse().map((e) => ({
      type: e.type,
      message: e.message,
      data: e.data,
    })),
    log_tail: logsDb.readLogs(ctx.db, run.id, undefined, FAILURE_LOG_LINES).map((l) => ({
      seq: l.seq,
      text: l.text,
    })),
  };
}

/** The job of a run as it stands now. */
export function loadJob(ctx: Context, jobId: string | null) {
  return jobId ? jobsDb.getJob(ctx.db, jobId) : null;
}

/** A run's checkpoints, by step. */
export function loadCheckpoints(ctx: Context, runId: string): Checkpoint[] {
  return checkpointsDb.listCheckpoints(ctx.db, runId);
}

/** The suite most recently used to evaluate any of these checkpoints. */
export function loadSuiteHint(ctx: Context, checkpoints: Checkpoint[]): string | null {
  const all = [...evaluationsByCheckpoint(ctx, checkpoints.map((c) => c.id)).values()].flat();
  all.sort((a, b) => a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0);
  return all.at(-1)?.suite ?? null;
}

/** The metric definitions and the key directions of a scope. */
function directionsFor(
  ctx: Context,
  scope: { project: string; experiment: string | null },
  keys: Iterable<string>,
) {
  return keyDirections(scope, projectsDb.listMetricDefinitions(ctx.db), keys);
}

/** Key summaries of each run, for a comparison; 404 naming the first run that does not exist. */
export function loadRunsForComparison(ctx: Context, ids: string[]) {
  return ids.map((id) => ({ run: getRun(ctx, id), keys: metricsDb.listKeySummaries(ctx.db, id) }));
}

/** The directions of every key of the compared runs, in the first run's scope. */
export function loadDirections(
  ctx: Context,
  scope: { project: string; experiment: string | null },
  runs: { keys: KeySummary[] }[],
  extra: string[] = [],
) {
  const keys = new Set([...extra, ...runs.flatMap((r) => r.keys.map((k) => k.key))]);
  return directionsFor(ctx, scope, keys);
}

/**
 * Checkpoints of the given runs with their evaluations and the primary metric at their step.
 * Evaluations queued before the run last saved the file again (Lightning's `last.ckpt`) were
 * of an older file: they do not count for the file it holds now.
 */
function candidatesOf(
  ctx: Context,
  runs: StoredRun[],
  primaryKey: string | null,
): CheckpointCandidate[] {
  const stored = runs.flatMap((r) => checkpointsDb.listStoredCheckpoints(ctx.db, r.id));
  const evaluations = evaluationsByCheckpoint(ctx, stored.map((c) => c.id));
  return stored.map((s) => {
    const c = checkpointsDb.publicCheckpoint(s);
    let train = primaryKey === null ? null : metricNumber(c.metrics[primaryKey]);
    if (train === null && primaryKey !== null && c.step !== null) {
      train = metricsDb.valueAtOrBefore(ctx.db, c.run_id, primaryKey, c.step)?.value ?? null;
    }
    const ofThisFile = (evaluations.get(c.id) ?? []).filter((e) => e.created_at >= s.written_at);
    return { checkpoint: c, train_value: train, evaluations: ofThisFile };
  });
}

/** Per run, the earliest step a LOSS_NAN event names (runs without one are left out). */
export function loadLossNanSteps(ctx: Context, runIds: Iterable<string>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const runId of new Set(runIds)) {
    const events = eventsDb.listEvents(ctx.db, { run_id: runId, type: "LOSS_NAN" }, EVENTS_READ);
    for (const e of events.items) {
      const step = (e.data as { step?: unknown }).step;
      if (typeof step === "number" && Number.isFinite(step) && !(out[runId] <= step)) {
        out[runId] = step;
      }
    }
  }
  return out;
}

function rankingInput(
  ctx: Context,
  scope: { project: string; experiment: string | null },
  runs: StoredRun[],
  primary: { key: string; direction: MetricDirection } | null,
): RankingInput {
  const candidates = candidatesOf(ctx, runs, primary?.key ?? null);
  const evalKeys = candidates.flatMap((c) => c.evaluations.flatMap((e) => Object.keys(e.metrics)));
  return {
    candidates,
    primary,
    eval_directions: directionsFor(ctx, scope, evalKeys),
    loss_nan_steps: loadLossNanSteps(ctx, candidates.map((c) => c.checkpoint.run_id)),
  };
}

/** The checkpoints of one run, ready to rank by its primary metric. */
export function loadRunRanking(ctx: Context, runId: string): RankingInput & { run_id: string } {
  const run = getRun(ctx, runId);
  const primary = run.primary_metric
    ? { key: run.primary_metric.key, direction: run.primary_metric.direction }
    : null;
  const stored = runsDb.getRun(ctx.db, runId)!;
  return { run_id: runId, ...rankingInput(ctx, run, [stored], primary) };
}

/**
 * The checkpoints of every run of an experiment (`<project>/<experiment>`), ready to rank by
 * the experiment's primary metric (experiment → project → global, then a known loss key).
 */
export function loadExperimentRanking(ctx: Context, path: string): RankingInput {
  const slash = path.indexOf("/");
  const [project, name] = [path.slice(0, slash), path.slice(slash + 1)];
  const experiment = projectsDb.getExperiment(ctx.db, project, name);
  if (!experiment) throw notFound("Experiment", path);
  const runs = runsDb.listRuns(ctx.db, { project, experiment: name }, MAX_EXPERIMENT_RUNS).items;
  const keys = new Set(
    runs.flatMap((r) => metricsDb.listKeySummaries(ctx.db, r.id).map((k) => k.key)),
  );
  const primary = resolvePrimaryKey(
    {
      project,
      experiment: name,
      projectPrimary: projectsDb.getProject(ctx.db, project)?.primary_metric,
      experimentPrimary: experiment.primary_metric,
    },
    projectsDb.listMetricDefinitions(ctx.db),
    [...keys].sort(),
  );
  return rankingInput(ctx, { project, experiment: name }, runs, primary);
}
