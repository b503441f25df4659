/**
 * Sweeps: create (trials expanded and the first ones submitted as ordinary jobs), advance
 * (more trials as slots free up, successive halving at each rung, the end), read and cancel.
 * Every face (REST, MCP, CLI, console) calls these.
 */
import type { Page } from "../../protocol/objects.ts";
import { jobSubmission } from "../../protocol/rest/jobs.ts";
import type {
  ParamValue,
  Sweep,
  SweepCreate,
  SweepTrial,
  TrialStatus,
} from "../../protocol/sweeps.ts";
import type { MetricDirection, SweepStatus } from "../../protocol/vocabulary.ts";
import {
  budgets as budgetsDb,
  jobs as jobsDb,
  metrics as metricsDb,
  projects as projectsDb,
  sweeps as sweepsDb,
} from "../db/mod.ts";
import type { JobState } from "../db/jobs.ts";
import type { SweepRecord, TrialRecord } from "../db/sweeps.ts";
import type { Context } from "../context.ts";
import { conflict, invalidField, notFound, quoted } from "../errors.ts";
import { cancelJob, DEFAULT_PROJECT, submitJob } from "../jobs/service.ts";
import { keyDirection, resolvePrimaryKey } from "../metrics/primary_metric.ts";
import { ensureProjectAndExperiment } from "../projects/service.ts";
import { emitEvent } from "../events/emit.ts";
import { expandTrials } from "./expand.ts";
import { decideRung, rungsReached, type RungValue } from "./halving.ts";
import { parameterImportance } from "./importance.ts";
import { paramText, trialSubmission } from "./trial_job.ts";
import { fmtNumber } from "../../lib/format.ts";
import { assertSweepFits, submissionRefusalOf } from "../budgets/service.ts";

/** Sweeps a list shows unless `limit` says otherwise. */
export const SWEEP_PAGE_SIZE = 50;

const ACTIVE = new Set(["QUEUED", "DISPATCHED", "RUNNING", "LOST"]);

/** Which metric trials are compared on, and which way is better. */
function sweepMetric(
  ctx: Context,
  req: SweepCreate,
  scope: { project: string; experiment: string | null },
): { key: string; direction: MetricDirection } {
  const definitions = projectsDb.listMetricDefinitions(ctx.db);
  const project = projectsDb.getProject(ctx.db, scope.project);
  const experiment = scope.experiment
    ? projectsDb.getExperiment(ctx.db, scope.project, scope.experiment)
    : null;
  const key = req.metric ?? resolvePrimaryKey(
    {
      ...scope,
      projectPrimary: project?.primary_metric ?? null,
      experimentPrimary: experiment?.primary_metric ?? null,
    },
    definitions,
    [],
  )?.key;
  if (!key) {
    throw invalidField(
      "sweep",
      "metric",
      `is required: project ${quoted(scope.project)} has no primary metric to compare trials on`,
    );
  }
  const direction = keyDirection(scope, definitions, key);
  if (!direction) {
    throw invalidField(
      "sweep",
      "metric",
      `cannot tell whether a higher or a lower ${quoted(key)} is better; define it with ` +
        `PUT /api/metric-definitions (direction "min" or "max")`,
    );
  }
  return { key, direction };
}

/**
 * What one sweep may write: its trials × the size of its base (as JSON). Each trial is a job
 * holding a copy of the base, so this bounds one request's write (and the trials count is
 * bounded by MAX_TRIALS).
 */
export const MAX_SWEEP_BYTES = 8_000_000;

/**
 * `POST /api/sweeps`: stores the sweep and its trials, and submits the first trials. `by` (a
 * token id) is the token whose budget the sweep and its trials count against.
 */
export function createSweep(ctx: Context, req: SweepCreate, by: string | null = null): Sweep {
  const project = req.project ?? req.base.project ?? DEFAULT_PROJECT;
  const experiment = req.experiment ?? req.base.experiment ?? null;
  const method = req.method ?? "grid";
  const expansion = expandTrials(req.parameters, method, { runs: req.runs, seed: req.seed });
  if ("field" in expansion) throw invalidField("sweep", expansion.field, expansion.problem);
  // Each trial stores a copy of the base: the sweep's write is trials × its size.
  const baseBytes = new TextEncoder().encode(JSON.stringify(req.base)).length;
  const trials = expansion.trials.length;
  if (trials * baseBytes > MAX_SWEEP_BYTES) {
    throw invalidField(
      "sweep",
      "base",
      `${trials} trials × ${baseBytes} bytes of base = ${trials * baseBytes} bytes, more than ` +
        `the ${MAX_SWEEP_BYTES} a sweep may write; make the base smaller (its env, its ` +
        "command) or the sweep shorter",
    );
  }
  const passAs = req.pass_as ?? "args";
  // Every trial's job must be a valid submission (appended arguments count against limits).
  expansion.trials.forEach((params, i) => {
    const parsed = jobSubmission.safeParse(
      trialSubmission(req.base, { name: req.name, project, experiment }, i, params, passAs),
    );
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw invalidField(
        "sweep",
        `base.${issue.path.join(".")}`,
        `${issue.message} (in trial ${i + 1})`,
      );
    }
  });
  const at = ctx.now().toISOString();
  const id = ctx.newId("s");
  ctx.db.tx(() => {
    if (by) {
      assertSweepFits(ctx, by, { name: req.name, trials, gpus: req.base.gpus, project });
    }
    ensureProjectAndExperiment(ctx, { project, experiment }, at);
    const metric = sweepMetric(ctx, req, { project, experiment });
    sweepsDb.insertSweep(ctx.db, {
      id,
      name: req.name,
      project,
      experiment,
      spec: { ...req, method, pass_as: passAs },
      metric_key: metric.key,
      direction: metric.direction,
      created_at: at,
    }, expansion.trials);
    if (by) budgetsDb.setSweepCreator(ctx.db, id, by);
    advanceSweep(ctx, sweepsDb.getSweep(ctx.db, id)!);
  });
  return getSweep(ctx, id);
}

/** What one pass over the running sweeps did. */
export interface SweepPass {
  launched: number;
  stopped: number;
  finished: number;
}

/** Advances every running sweep (the sweep loop's pass). */
export function advanceSweeps(ctx: Context): SweepPass {
  const total: SweepPass = { launched: 0, stopped: 0, finished: 0 };
  for (const sweep of sweepsDb.sweepsInStatus(ctx.db, "RUNNING")) {
    const pass = ctx.db.tx(() => {
      const fresh = sweepsDb.getSweep(ctx.db, sweep.id);
      return fresh?.status === "RUNNING" ? advanceSweep(ctx, fresh) : null;
    });
    if (!pass) continue;
    total.launched += pass.launched;
    total.stopped += pass.stopped;
    total.finished += pass.finished;
  }
  return total;
}

interface TrialState {
  trial: TrialRecord;
  job: JobState | null;
}

/**
 * One step of a sweep, inside the caller's transaction: stop the trials that lost at a rung
 * they reached, submit pending trials while fewer than `max_parallel` are active, and end
 * the sweep once every trial has ended.
 */
function advanceSweep(ctx: Context, sweep: SweepRecord): SweepPass {
  const states: TrialState[] = sweepsDb.listTrials(ctx.db, sweep.id).map((trial) => ({
    trial,
    job: trial.job_id ? jobsDb.getJob(ctx.db, trial.job_id) : null,
  }));
  const stopped = sweep.spec.early_stop ? stopAtRungs(ctx, sweep, states) : 0;

  let active = states.filter((s) => s.job && ACTIVE.has(s.job.status)).length;
  const maxParallel = sweep.spec.max_parallel ?? states.length;
  let launched = 0;
  // Trials are the creator's jobs: they wait while its budget has no room for another.
  const owner = budgetsDb.sweepCreator(ctx.db, sweep.id);
  for (const s of states) {
    if (active >= maxParallel) break;
    if (s.trial.job_id) continue;
    const submission = trialSubmission(
      sweep.spec.base,
      sweep,
      s.trial.idx,
      s.trial.params,
      sweep.spec.pass_as ?? "args",
    );
    if (
      owner &&
      submissionRefusalOf(ctx, owner, { gpus: submission.gpus, project: sweep.project })
    ) break;
    const job = submitJob(ctx, submission, "TRAIN", {
      config: { ...s.trial.params, sweep_id: sweep.id, sweep_trial: s.trial.idx + 1 },
      submitted_by: owner,
    });
    sweepsDb.updateTrial(ctx.db, sweep.id, s.trial.idx, { job_id: job.id });
    s.trial.job_id = job.id;
    s.job = jobsDb.getJob(ctx.db, job.id);
    active++;
    launched++;
  }

  const ended = states.every((s) => s.job && !ACTIVE.has(s.job.status));
  let finished = 0;
  if (ended) {
    const anyGood = states.some((s) =>
      s.job!.status === "SUCCEEDED" || s.trial.stopped_at !== null
    );
    const status = anyGood ? "SUCCEEDED" : "FAILED";
    if (sweepsDb.finishSweep(ctx.db, sweep.id, status, ctx.now().toISOString())) {
      finished = 1;
      sweepFinished(ctx, sweep, status);
    }
  }
  return { launched, stopped, finished };
}

function sweepFinished(ctx: Context, sweep: SweepRecord, status: SweepStatus): void {
  emitEvent(ctx, {
    type: "SWEEP_FINISHED",
    severity: "info",
    message: `Sweep ${quoted(sweep.name)} (${sweep.id}) ended ${status}`,
    data: { sweep_id: sweep.id, status },
  });
}

/** Successive halving over the rungs the trials have reached; returns how many it stopped. */
function stopAtRungs(ctx: Context, sweep: SweepRecord, states: TrialState[]): number {
  const es = sweep.spec.early_stop!;
  const key = sweep.metric_key;
  const withRun = states.filter((s) => s.job?.run_id);
  const lastStep = new Map(withRun.map((s) => [
    s.trial.idx,
    metricsDb.getKeySummary(ctx.db, s.job!.run_id!, key)?.last_step ?? -1,
  ]));
  const rungs = new Set(withRun.flatMap((s) => rungsReached(lastStep.get(s.trial.idx)!, es)));
  let stopped = 0;
  for (const rung of [...rungs].sort((a, b) => a - b)) {
    const reached = withRun.filter((s) => lastStep.get(s.trial.idx)! >= rung);
    // Each trial is judged at a rung once, when it first reaches it (as ASHA does): a trial
    // kept at a rung is not stopped there later because better ones arrived.
    const unjudged = (s: TrialState) =>
      s.job!.status === "RUNNING" && s.trial.stopped_at === null &&
      (s.trial.rung_checked ?? -1) < rung;
    // A rung every trial there was already judged at has nothing to decide: skip its reads.
    if (!reached.some(unjudged)) continue;
    const values: RungValue[] = reached.map((s) => ({
      index: s.trial.idx,
      value: metricsDb.valueAtOrBefore(ctx.db, s.job!.run_id!, key, rung)?.value ?? null,
      running: unjudged(s),
    }));
    const stops = decideRung(rung, values, sweep.direction, es.keep_fraction, key);
    for (const stop of stops) {
      const s = states.find((x) => x.trial.idx === stop.index)!;
      const reason = `Sweep ${quoted(sweep.name)} (${sweep.id}) ${stop.reason}`;
      cancelJob(ctx, s.job!.id, `sweep ${sweep.id}`, reason);
      sweepsDb.updateTrial(ctx.db, sweep.id, s.trial.idx, {
        stopped_at: rung,
        stop_reason: reason,
      });
      emitEvent(ctx, {
        type: "SWEEP_TRIAL_STOPPED",
        severity: "info",
        job_id: s.job!.id,
        run_id: s.job!.run_id,
        message: reason,
        data: { sweep_id: sweep.id, trial: s.trial.idx + 1, rung },
      });
      s.trial.stopped_at = rung;
      s.trial.stop_reason = reason;
      stopped++;
    }
    for (const v of values) {
      if (!v.running) continue;
      const s = states.find((x) => x.trial.idx === v.index)!;
      if (s.trial.stopped_at !== null) continue;
      sweepsDb.updateTrial(ctx.db, sweep.id, v.index, { rung_checked: rung });
      s.trial.rung_checked = rung;
    }
  }
  return stopped;
}

/** `GET /api/sweeps/{id}`. */
export function getSweep(ctx: Context, id: string): Sweep {
  const sweep = sweepsDb.getSweep(ctx.db, id);
  if (!sweep) throw notFound("Sweep", id);
  return sweepView(ctx, sweep);
}

/** `GET /api/sweeps`: newest first. */
export function listSweeps(
  ctx: Context,
  query: { status?: SweepStatus; project?: string; limit?: number; cursor?: string },
): Page<Sweep> {
  const page = sweepsDb.listSweeps(
    ctx.db,
    { status: query.status, project: query.project },
    query.limit ?? SWEEP_PAGE_SIZE,
    query.cursor ? Number(query.cursor) : undefined,
  );
  return { items: page.items.map((s) => sweepView(ctx, s)), next_cursor: page.next_cursor };
}

/**
 * `POST /api/sweeps/{id}/cancel`: no more trials start; queued trials are cancelled, and
 * running ones too unless `let_running_finish`.
 */
export function cancelSweep(
  ctx: Context,
  id: string,
  by: string,
  options: { let_running_finish?: boolean } = {},
): Sweep {
  ctx.db.tx(() => {
    const sweep = sweepsDb.getSweep(ctx.db, id);
    if (!sweep) throw notFound("Sweep", id);
    if (sweep.status !== "RUNNING") {
      throw conflict(`Cannot cancel sweep ${quoted(id)}: it already ended ${sweep.status}`);
    }
    for (const trial of sweepsDb.listTrials(ctx.db, id)) {
      const job = trial.job_id ? jobsDb.getJob(ctx.db, trial.job_id) : null;
      if (!job || !ACTIVE.has(job.status) || job.status === "LOST") continue;
      if (options.let_running_finish && job.status !== "QUEUED") continue;
      cancelJob(ctx, job.id, by, `Cancelled with sweep ${quoted(sweep.name)} (${id}) by ${by}`);
    }
    if (sweepsDb.finishSweep(ctx.db, id, "CANCELLED", ctx.now().toISOString())) {
      sweepFinished(ctx, sweep, "CANCELLED");
    }
  });
  return getSweep(ctx, id);
}

function trialView(ctx: Context, sweep: SweepRecord, trial: TrialRecord): SweepTrial {
  const job = trial.job_id ? jobsDb.getJob(ctx.db, trial.job_id) : null;
  const summary = job?.run_id
    ? metricsDb.getKeySummary(ctx.db, job.run_id, sweep.metric_key)
    : null;
  const min = sweep.direction === "min";
  const finite = (v: number | null | undefined) =>
    v === null || v === undefined || Number.isNaN(v) ? null : v;
  const status: TrialStatus = trial.stopped_at !== null ? "STOPPED" : job ? job.status : "PENDING";
  return {
    index: trial.idx,
    params: trial.params,
    job_id: trial.job_id,
    run_id: job?.run_id ?? null,
    status,
    metric: {
      latest: finite(summary?.last_value),
      best: finite(min ? summary?.min_value : summary?.max_value),
      best_step: (min ? summary?.min_step : summary?.max_step) ?? null,
      step: summary?.last_step ?? null,
    },
    stopped_at: trial.stopped_at,
    stop_reason: trial.stop_reason,
  };
}

const label = (params: Record<string, ParamValue>) =>
  Object.entries(params).map(([k, v]) => `${k}=${paramText(v)}`).join(" ");

function sweepView(ctx: Context, sweep: SweepRecord): Sweep {
  const trials = sweepsDb.listTrials(ctx.db, sweep.id).map((t) => trialView(ctx, sweep, t));
  const counts: Partial<Record<TrialStatus, number>> = {};
  for (const t of trials) counts[t.status] = (counts[t.status] ?? 0) + 1;
  const min = sweep.direction === "min";
  let best: Sweep["best"] = null;
  for (const t of trials) {
    const v = t.metric.best;
    if (v === null) continue;
    if (!best || (min ? v < best.value : v > best.value)) {
      best = {
        index: t.index,
        params: t.params,
        run_id: t.run_id,
        value: v,
        step: t.metric.best_step,
      };
    }
  }
  const names = Object.keys(sweep.spec.parameters);
  const importance = parameterImportance(
    trials.map((t) => ({ params: t.params, final: t.metric.latest })),
    names,
  );
  const parts = [
    `${trials.length} trials`,
    ...(["RUNNING", "QUEUED", "PENDING", "SUCCEEDED", "STOPPED", "FAILED", "CANCELLED"] as const)
      .filter((s) => counts[s]).map((s) => `${counts[s]} ${s.toLowerCase()}`),
  ];
  const bestText = best
    ? `best so far: trial ${best.index + 1} (${label(best.params)}) with ${sweep.metric_key} ` +
      `${fmtNumber(best.value)}${best.step !== null ? ` at step ${best.step}` : ""}`
    : `no trial has logged ${sweep.metric_key} yet`;
  const top = importance[0];
  const importanceText = top && top.correlation !== null
    ? `; ${top.parameter} matters most (rank correlation ${top.correlation} with ${sweep.metric_key})`
    : "";
  const next_actions: Sweep["next_actions"] = [];
  if (sweep.status === "RUNNING") {
    next_actions.push({
      tool: "wait_for_run",
      args: { sweep_id: sweep.id, until: "finished" },
      why: "returns when the sweep ends or a rung stops trials",
    });
  }
  if (best?.run_id) {
    next_actions.push({
      tool: "get_best_checkpoint",
      args: { run_id: best.run_id },
      why: `the best checkpoint of the best trial (${label(best.params)})`,
    });
  }
  const ranked = trials.filter((t) => t.run_id && t.metric.best !== null)
    .sort((a, b) => min ? a.metric.best! - b.metric.best! : b.metric.best! - a.metric.best!);
  if (ranked.length >= 2) {
    next_actions.push({
      tool: "compare_runs",
      args: { runs: ranked.slice(0, 3).map((t) => t.run_id), metric: sweep.metric_key },
      why: "the leading trials side by side",
    });
  }
  return {
    id: sweep.id,
    name: sweep.name,
    project: sweep.project,
    experiment: sweep.experiment,
    status: sweep.status,
    method: sweep.spec.method ?? "grid",
    metric: { key: sweep.metric_key, direction: sweep.direction },
    parameters: sweep.spec.parameters,
    max_parallel: sweep.spec.max_parallel ?? trials.length,
    early_stop: sweep.spec.early_stop ?? null,
    pass_as: sweep.spec.pass_as ?? "args",
    counts,
    trials,
    best,
    importance,
    summary:
      `Sweep ${quoted(sweep.name)} (${sweep.id}) ${sweep.status.toLowerCase()}: ${
        parts.join(", ")
      }; ` +
      `${bestText}${importanceText}.`,
    next_actions,
    created_at: sweep.created_at,
    finished_at: sweep.finished_at,
  };
}
