/**
 * Runs in the domain: read and listed with their primary metric, their keys, logs and
 * checkpoints, SDK and imported runs registered, and ingest batches stored in one transaction.
 */
import type {
  CheckpointWithEvaluations,
  EventRecord,
  LogLine,
  Page,
  Run,
} from "../../protocol/objects.ts";
import type { LogsQuery, RunGroupsQuery, RunListQuery } from "../../protocol/rest/runs.ts";
import type {
  ImportRegistration,
  SdkLogBatch,
  SdkRunRegistration,
} from "../../protocol/rest/sdk.ts";
import type { RunStatus } from "../../protocol/vocabulary.ts";
import {
  jobs as jobsDb,
  lineage as lineageDb,
  logs as logsDb,
  metrics as metricsDb,
  projects as projectsDb,
  runs as runsDb,
} from "../db/mod.ts";
import type { StoredRun } from "../db/runs.ts";
import type { Context } from "../context.ts";
import { emitEvent } from "../events/emit.ts";
import { notFound, quoted, ValidationError } from "../errors.ts";
import { partitionSdkBatch, type Refused } from "../../protocol/sdk_batch.ts";
import { primaryMetricOf, resolvePrimaryKey } from "../metrics/primary_metric.ts";
import { DEFAULT_PROJECT } from "../jobs/service.ts";
import { ensureProjectAndExperiment } from "../projects/service.ts";
import { checkpointsWithEvaluations, recordEvaluationResults } from "../evaluations/mod.ts";
import { encodeMetricValue } from "../../protocol/metric_value.ts";
import { maskSecretsDeep, maskSecretText, secretValues } from "../../protocol/secret_env.ts";
import { checkpointGone, registerCheckpoint } from "./register_checkpoint.ts";
import { publishAfterCommit } from "./live_fanout.ts";

/** A run object with its primary metric resolved. */
export function withPrimaryMetric(ctx: Context, run: StoredRun): Run {
  const project = projectsDb.getProject(ctx.db, run.project);
  const experiment = run.experiment
    ? projectsDb.getExperiment(ctx.db, run.project, run.experiment)
    : null;
  const keys = metricsDb.listKeySummaries(ctx.db, run.id);
  const resolved = resolvePrimaryKey(
    {
      project: run.project,
      experiment: run.experiment,
      projectPrimary: project?.primary_metric,
      experimentPrimary: experiment?.primary_metric,
    },
    projectsDb.listMetricDefinitions(ctx.db),
    keys.map((k) => k.key),
  );
  const summary = resolved ? keys.find((k) => k.key === resolved.key) ?? null : null;
  return { ...run, primary_metric: primaryMetricOf(resolved, summary) };
}

/** The stored run; NotFoundError naming the id when there is none. */
export function requireRun(ctx: Context, id: string): StoredRun {
  const run = runsDb.getRun(ctx.db, id);
  if (!run) throw notFound("Run", id);
  return run;
}

/** `GET /api/runs/{id}`: the run with its primary metric. */
export function getRun(ctx: Context, id: string): Run {
  return withPrimaryMetric(ctx, requireRun(ctx, id));
}

/** Runs a list shows unless `limit` says otherwise. */
export const RUN_PAGE_SIZE = 100;

const filterOf = (q: RunGroupsQuery) => ({
  project: q.project,
  experiment: q.experiment,
  status: q.status,
  job_id: q.job_id,
  source: q.source,
  q: q.q || undefined,
});

/**
 * `GET /api/runs`: newest first, each with its primary metric; filters by project,
 * experiment, status, job and source, and `q` finds runs whose name or id contains it (any
 * case). `next_cursor` pages on.
 */
export function listRuns(ctx: Context, query: RunListQuery): Page<Run> {
  const page = runsDb.listRuns(
    ctx.db,
    filterOf(query),
    query.limit ?? RUN_PAGE_SIZE,
    query.cursor ? Number(query.cursor) : undefined,
  );
  return { ...page, items: page.items.map((r) => withPrimaryMetric(ctx, r)) };
}

/** Runs of one project and experiment (null: runs outside any experiment), counted. */
export interface RunGroup {
  project: string;
  experiment: string | null;
  /** Runs in the group that match the filters. */
  runs: number;
  /** The same runs by status (statuses with none left out). */
  by_status: Partial<Record<RunStatus, number>>;
  /** The latest start, finish or creation among them. */
  last_activity_at: string;
}

/**
 * `GET /api/run-groups`: the runs the same filters as `GET /api/runs` select, grouped by
 * project and experiment; the group with the newest run first.
 */
export function listRunGroups(ctx: Context, query: RunGroupsQuery): { groups: RunGroup[] } {
  const groups = new Map<string, RunGroup & { newest: number }>();
  for (const row of runsDb.countRunsByGroup(ctx.db, filterOf(query))) {
    const id = JSON.stringify([row.project, row.experiment]);
    let g = groups.get(id);
    if (!g) {
      g = {
        project: row.project,
        experiment: row.experiment,
        runs: 0,
        by_status: {},
        last_activity_at: row.last_activity_at,
        newest: row.newest_seq,
      };
      groups.set(id, g);
    }
    g.runs += row.runs;
    g.by_status[row.status] = row.runs;
    if (row.last_activity_at > g.last_activity_at) g.last_activity_at = row.last_activity_at;
    g.newest = Math.max(g.newest, row.newest_seq);
  }
  return {
    groups: [...groups.values()].sort((a, b) => b.newest - a.newest).map(
      ({ newest: _, ...g }) => g,
    ),
  };
}

/** `GET /api/runs/{id}/metrics` without `keys`: every key of the run with its summary. */
export function listMetricKeys(ctx: Context, runId: string) {
  requireRun(ctx, runId);
  return {
    run_id: runId,
    keys: metricsDb.listKeySummaries(ctx.db, runId).map((k) => ({
      ...k,
      last_value: encodeMetricValue(k.last_value),
    })),
  };
}

/** Lines `GET /api/runs/{id}/logs` returns unless `limit` says otherwise. */
export const LOG_PAGE_SIZE = 500;

/**
 * `GET /api/runs/{id}/logs`: the lines after `after_seq`, oldest first; with no `after_seq`,
 * the tail (the last `limit` lines).
 */
export function getLogs(ctx: Context, runId: string, query: LogsQuery): { lines: LogLine[] } {
  requireRun(ctx, runId);
  return { lines: logsDb.readLogs(ctx.db, runId, query.after_seq, query.limit ?? LOG_PAGE_SIZE) };
}

/** `GET /api/runs/{id}/checkpoints`: the run's checkpoints by step, each with its evaluations. */
export function listCheckpoints(ctx: Context, runId: string): Page<CheckpointWithEvaluations> {
  requireRun(ctx, runId);
  return { items: checkpointsWithEvaluations(ctx, runId), next_cursor: null };
}

/** Run statuses after which no more points or lines come (unless a lost node returns). */
const LIVE_STATUSES: ReadonlySet<RunStatus> = new Set(["QUEUED", "RUNNING"]);

/**
 * What a run's live streams (metrics, logs) end with: `{run_id, status}` once it has
 * finished, null while more may come.
 */
export function runStreamEnd(
  ctx: Context,
  runId: string,
): { run_id: string; status: RunStatus } | null {
  const run = runsDb.getRun(ctx.db, runId);
  return run && !LIVE_STATUSES.has(run.status) ? { run_id: runId, status: run.status } : null;
}

/** Whether an event may have ended a run's streams (a RUN_* event of that run). */
export function mayEndRun(runId: string, e: Pick<EventRecord, "run_id" | "type">): boolean {
  return e.run_id === runId && e.type.startsWith("RUN_");
}

/** Registers a run for the SDK outside any job; the same id registered again returns it. */
export function registerSdkRun(
  ctx: Context,
  r: SdkRunRegistration,
): { run: Run; created: boolean } {
  const at = ctx.now().toISOString();
  const id = r.id ?? ctx.newId("r");
  const created = ctx.db.tx(() => {
    if (runsDb.getRun(ctx.db, id)) return false;
    const project = r.project ?? DEFAULT_PROJECT;
    ensureProjectAndExperiment(ctx, { project, experiment: r.experiment }, at);
    runsDb.insertRun(ctx.db, {
      id,
      job_id: null,
      attempt: 1,
      project,
      experiment: r.experiment ?? null,
      name: r.name ?? id,
      source: "sdk",
      status: "RUNNING",
      // Masked on the way in: a secret-named key, or a secret flag in the recorded argv.
      config: maskSecretsDeep(r.config ?? {}, []) as Record<string, unknown>,
      env: maskSecretsDeep(r.env ?? {}, []) as Record<string, unknown>,
      max_steps: r.max_steps ?? null,
      created_at: at,
      started_at: at,
    });
    emitEvent(ctx, {
      type: "RUN_STARTED",
      severity: "info",
      run_id: id,
      message: `Run "${r.name ?? id}" (${id}) started from the SDK in project "${project}"`,
      data: { source: "sdk" },
    });
    return true;
  });
  return { run: getRun(ctx, id), created };
}

/**
 * Creates the IMPORTED run of an old experiment folder; the same `import_key` again returns
 * that run, so importing a folder twice never duplicates it.
 */
export function registerImport(
  ctx: Context,
  r: ImportRegistration,
): { run: Run; created: boolean } {
  const at = ctx.now().toISOString();
  const { id, created } = ctx.db.tx(() => {
    const existing = runsDb.getRunByImportKey(ctx.db, r.import_key);
    if (existing) return { id: existing.id, created: false };
    const id = ctx.newId("r");
    ensureProjectAndExperiment(ctx, r, at);
    runsDb.insertRun(ctx.db, {
      id,
      job_id: null,
      attempt: 1,
      project: r.project,
      experiment: r.experiment ?? null,
      name: r.name,
      source: "import",
      status: "IMPORTED",
      config: maskSecretsDeep(r.config ?? {}, []) as Record<string, unknown>,
      env: {},
      max_steps: null,
      created_at: at,
      started_at: null,
    });
    runsDb.setImportKey(ctx.db, id, r.import_key);
    return { id, created: true };
  });
  return { run: getRun(ctx, id), created };
}

/** What one ingest batch stored. */
export interface IngestResult {
  points: number;
  checkpoints: number;
  logs: number;
}

const FINISH_EVENT = {
  SUCCEEDED: "RUN_SUCCEEDED",
  FAILED: "RUN_FAILED",
  CANCELLED: "RUN_CANCELLED",
};

/**
 * Metric keys one run may have. Each key is a row of its Metrics tab, a summary and a series:
 * a run that logs ever new keys (a key per sample, per step) would make every reader of the
 * run slow; points of keys past the budget are not stored, and the run says so once per batch.
 */
export const MAX_METRIC_KEYS_PER_RUN = 10_000;

/** The points whose keys fit the run's key budget, and what did not. */
function withinKeyBudget<P extends { key: string }>(
  ctx: Context,
  runId: string,
  points: P[],
): { kept: P[]; dropped: { points: number; keys: number; example: string } } {
  const none = { points: 0, keys: 0, example: "" };
  if (points.length === 0) return { kept: points, dropped: none };
  const keys = new Set(points.map((p) => p.key));
  const have = metricsDb.keyCount(ctx.db, runId);
  if (have + keys.size <= MAX_METRIC_KEYS_PER_RUN) return { kept: points, dropped: none };
  let room = MAX_METRIC_KEYS_PER_RUN - have;
  const allowed = new Set<string>();
  const refused = new Set<string>();
  for (const key of keys) {
    if (metricsDb.hasKey(ctx.db, runId, key)) allowed.add(key);
    else if (room > 0) {
      allowed.add(key);
      room--;
    } else refused.add(key);
  }
  if (refused.size === 0) return { kept: points, dropped: none };
  const kept = points.filter((p) => allowed.has(p.key));
  return {
    kept,
    dropped: {
      points: points.length - kept.length,
      keys: refused.size,
      example: refused.values().next().value!,
    },
  };
}

/** The values of a job's secret variables (see protocol/secret_env.ts). */
export function jobSecretValues(ctx: Context, jobId: string): string[] {
  const job = jobsDb.getJob(ctx.db, jobId);
  return job ? secretValues(job.env, job.secret_env) : [];
}

/**
 * Stores one batch for a run in one transaction: points (newest write per key and step
 * wins), checkpoints (one per path), log lines (one per seq), progress, config, and the
 * final status. Subscribers hear of it after the commit.
 */
export function ingestBatch(ctx: Context, runId: string, b: SdkLogBatch): IngestResult {
  const at = ctx.now();
  const atIso = at.toISOString();
  const wallNow = at.getTime() / 1000;
  return ctx.db.tx(() => {
    const run = runsDb.getRun(ctx.db, runId);
    if (!run) throw notFound("Run", runId);
    const { kept, dropped: overBudget } = withinKeyBudget(ctx, runId, b.points ?? []);
    if (overBudget.points) {
      runsDb.addDroppedPoints(ctx.db, runId, overBudget.points);
      emitEvent(ctx, {
        type: "POINTS_DROPPED",
        severity: "warning",
        run_id: runId,
        job_id: run.job_id,
        message: `Run "${run.name}" (${runId}) has ${MAX_METRIC_KEYS_PER_RUN} metric keys, ` +
          `the most a run may have: ${overBudget.points} point` +
          `${overBudget.points === 1 ? "" : "s"} of ${overBudget.keys} new key` +
          `${overBudget.keys === 1 ? "" : "s"} (such as ${quoted(overBudget.example)}) not stored`,
        data: {
          dropped: overBudget.points,
          dropped_total: run.dropped_points + overBudget.points,
          reason: "metric key budget",
          max_keys: MAX_METRIC_KEYS_PER_RUN,
        },
      });
    }
    const stored = metricsDb.writePoints(
      ctx.db,
      runId,
      kept.map((p) =>
        p.wall_time === undefined
          ? { ...p, wall_time: wallNow }
          : p as typeof p & { wall_time: number }
      ),
    );
    const maxStep = stored.reduce((m, p) => Math.max(m, p.step), b.step ?? -1);
    if (maxStep >= 0 || b.epoch !== undefined) {
      runsDb.advanceRunProgress(ctx.db, runId, maxStep >= 0 ? maxStep : null, b.epoch ?? null);
    }
    if (b.dropped) {
      runsDb.addDroppedPoints(ctx.db, runId, b.dropped);
      emitEvent(ctx, {
        type: "POINTS_DROPPED",
        severity: "warning",
        run_id: runId,
        job_id: run.job_id,
        message: `Run "${run.name}" (${runId}) lost ${b.dropped} metric point` +
          `${b.dropped === 1 ? "" : "s"} the SDK could neither send nor keep on disk`,
        data: { dropped: b.dropped, dropped_total: run.dropped_points + b.dropped },
      });
    }
    // A job's secret values, and secret-named keys and flags, are masked on the way in: in
    // its log, its config and its recorded environment (the SDK's argv).
    const secrets = (b.logs?.length || b.config || b.env) && run.job_id
      ? jobSecretValues(ctx, run.job_id)
      : [];
    if (b.config || b.env) {
      const masked = (o: Record<string, unknown>) =>
        maskSecretsDeep(o, secrets) as Record<string, unknown>;
      runsDb.updateRun(ctx.db, runId, {
        config: b.config ? { ...run.config, ...masked(b.config) } : undefined,
        env: b.env ? { ...run.env, ...masked(b.env) } : undefined,
      }, atIso);
    }
    // The agent sends the code snapshot before the process starts; a later one (the job's own
    // SDK, a replay) never replaces it.
    if (b.provenance) lineageDb.insertProvenance(ctx.db, runId, b.provenance);
    let newCheckpoints = 0;
    for (const c of b.checkpoints ?? []) {
      if (c.state === "gone") {
        checkpointGone(ctx, run, c, atIso);
        continue;
      }
      const metrics = c.metrics ?? metricsAtStep(ctx, runId, c.step);
      const { checkpoint, created, rewritten } = registerCheckpoint(ctx, run, c, metrics, atIso);
      if (checkpoint.state === "incomplete" && (created || rewritten)) {
        emitEvent(ctx, {
          type: "CHECKPOINT_INCOMPLETE",
          severity: "warning",
          run_id: runId,
          job_id: run.job_id,
          message: `Checkpoint "${c.path}" of run ${runId}` +
            (c.step !== undefined ? ` at step ${c.step}` : "") +
            ` is not complete: ${checkpoint.problem}. It is never recommended or evaluated`,
          data: {
            checkpoint_id: checkpoint.id,
            path: checkpoint.path,
            problem: checkpoint.problem,
          },
        });
      } else if (created) {
        newCheckpoints++;
        emitEvent(ctx, {
          type: "CHECKPOINT_CREATED",
          severity: "info",
          run_id: runId,
          job_id: run.job_id,
          message: `Checkpoint "${c.path}" of run ${runId}` +
            (c.step !== undefined ? ` at step ${c.step}` : ""),
          data: { checkpoint_id: checkpoint.id, step: checkpoint.step, path: checkpoint.path },
        });
      }
    }
    // An evaluation job's results (`run.log_evaluation()` or its output file, via the agent).
    if (b.evaluation) recordEvaluationResults(ctx, run, b.evaluation);
    // A job that prints one of its secret variables gets it masked in its stored log, also
    // where terminal escapes split it.
    const lines = logsDb.appendLogs(
      ctx.db,
      runId,
      (b.logs ?? []).map((l) => ({
        seq: l.seq,
        ts: typeof l.ts === "number" ? new Date(l.ts * 1000).toISOString() : l.ts ?? atIso,
        stream: l.stream ?? "stdout",
        text: maskSecretText(l.text, secrets),
      })),
    );
    if (b.status && run.status === "RUNNING") {
      runsDb.updateRun(ctx.db, runId, { status: b.status, finished_at: atIso }, atIso);
      emitEvent(ctx, {
        type: FINISH_EVENT[b.status],
        severity: b.status === "FAILED" ? "warning" : "info",
        run_id: runId,
        job_id: run.job_id,
        message: `Run "${run.name}" (${runId}) ended ${b.status}`,
        data: { source: run.source },
      });
    }
    // Subscribers hear of them once per transaction, after its commit.
    publishAfterCommit(ctx, runId, stored, lines);
    return { points: stored.length, checkpoints: newCheckpoints, logs: lines.length };
  });
}

/**
 * `POST /api/sdk/runs/{id}/log`: the valid part of a batch is stored and the rest named, so
 * one bad item (an over-long checkpoint path, a key the store cannot keep) does not cost the
 * good ones.
 */
export function ingestSdkBatch(
  ctx: Context,
  runId: string,
  body: unknown,
): { accepted: IngestResult; refused?: Refused } {
  const parts = partitionSdkBatch(body);
  if (parts === null) {
    throw new ValidationError("Invalid log batch: a JSON object expected", [
      { field: "log batch", problem: "a JSON object expected" },
    ]);
  }
  const accepted = ingestBatch(ctx, runId, parts.batch);
  return parts.refused.count ? { accepted, refused: parts.refused } : { accepted };
}

/** Every key's value at the nearest step at or below `step` (a checkpoint's metrics). */
function metricsAtStep(ctx: Context, runId: string, step: number | undefined) {
  if (step === undefined) return {};
  const out: Record<string, number | string> = {};
  for (const k of metricsDb.listKeySummaries(ctx.db, runId)) {
    if (k.key.startsWith("sys/")) continue;
    const v = metricsDb.valueAtOrBefore(ctx.db, runId, k.key, step);
    if (v) out[k.key] = encodeMetricValue(v.value);
  }
  return out;
}
