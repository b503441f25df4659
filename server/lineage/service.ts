/**
 * Lineage: runs form a tree. Fork a run (its job's command and working dir, some arguments,
 * variables or config changed, maybe resuming from a checkpoint), mark runs kept or
 * discarded, keep notes on runs and experiments, read the tree, and read and compare the code
 * each run ran.
 *
 * @module
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { Job, Run } from "../../protocol/objects.ts";
import {
  type CodeComparison,
  type ForkRequest,
  type Lineage,
  type LineageNode,
  type LineageQuery,
  type MarkRequest,
  type Note,
  type NoteRequest,
  type RunCodeAndNotes,
} from "../../protocol/lineage.ts";
import { jobSubmission } from "../../protocol/rest/jobs.ts";
import type { Provenance } from "../../protocol/provenance.ts";
import {
  jobs as jobsDb,
  lineage as lineageDb,
  projects as projectsDb,
  runs as runsDb,
} from "../db/mod.ts";
import type { Context } from "../context.ts";
import { invalidField, notFound, quoted, validationError } from "../errors.ts";
import { submitJob } from "../jobs/service.ts";
import { getRun, requireRun, withPrimaryMetric } from "../runs/service.ts";
import { applyOverrides, overridesLabel } from "./overrides.ts";
import { compareCode } from "./code_diff.ts";

/** Runs one tree answer holds at most. */
export const MAX_TREE_RUNS = 2000;
/** Notes an experiment's answer carries at most (the newest). */
export const MAX_NOTES = 200;

/** `GET /api/runs/{id}`: the run with its primary metric, its code and its notes. */
export function getRunDetail(ctx: Context, id: string): Run & RunCodeAndNotes {
  const run = getRun(ctx, id);
  return {
    ...run,
    code: lineageDb.getProvenance(ctx.db, id),
    notes: lineageDb.notesOfRun(ctx.db, id),
  };
}

/** A run's code snapshot; NotFoundError for an unknown run. */
export function getRunCode(ctx: Context, id: string): Provenance | null {
  requireRun(ctx, id);
  return lineageDb.getProvenance(ctx.db, id);
}

/**
 * `POST /api/runs/{id}/fork`: a child job with the parent run's command, working dir and
 * settings, the overrides applied and the parent recorded; with `from_checkpoint` it resumes
 * from that checkpoint (GPUCTL_RESUME_FROM).
 */
export function forkRun(
  ctx: Context,
  runId: string,
  req: ForkRequest,
  /** The token whose budget the child counts against. */
  by: string | null = null,
): Job {
  const run = requireRun(ctx, runId);
  const job = run.job_id ? jobsDb.getJob(ctx.db, run.job_id) : null;
  if (!job) {
    throw invalidField(
      "fork",
      "run_id",
      `run ${quoted(runId)} was not started by a job (source ${run.source}): it has no command ` +
        "to fork; submit_job with parent_run names it as the parent instead",
    );
  }
  const overrides = req.overrides ?? {};
  const child = applyOverrides(
    { command: job.command, env: job.env, config: job.config },
    overrides,
  );
  const label = overridesLabel(overrides);
  const submission = {
    name: req.name ?? `${job.name} ${label || "fork"}`.slice(0, 200).trim(),
    command: child.command,
    ...(typeof child.command === "string" ? {} : { shell: job.shell }),
    working_dir: job.working_dir,
    gpus: job.gpus,
    priority: job.priority,
    max_attempts: job.max_attempts,
    env: child.env,
    ...(job.secret_env.length ? { secret_env: job.secret_env } : {}),
    project: job.project,
    ...(job.experiment ? { experiment: job.experiment } : {}),
    ...(job.tensorboard_dir ? { tensorboard_dir: job.tensorboard_dir } : {}),
    ...(job.checkpoint_dir ? { checkpoint_dir: job.checkpoint_dir } : {}),
    runner: job.runner,
    ...(job.image ? { image: job.image } : {}),
    ...(job.node ? { node: job.node } : {}),
    ...(job.max_steps ? { max_steps: job.max_steps } : {}),
    ...(job.grace_s !== null ? { grace_s: job.grace_s } : {}),
    ...(job.stop_on.length ? { stop_on: job.stop_on } : {}),
    on_node_lost: job.on_node_lost,
    parent_run: run.id,
    ...(req.from_checkpoint ? { resume_from: req.from_checkpoint } : {}),
  };
  const parsed = jobSubmission.safeParse(submission);
  if (!parsed.success) throw validationError("fork", parsed.error);
  return submitJob(ctx, parsed.data, job.kind, {
    config: child.config,
    fork_overrides: overrides,
    submitted_by: by,
  });
}

/** `POST /api/runs/{id}/mark`: kept or discarded, with a one-line reason (the latest wins). */
export function markRun(ctx: Context, runId: string, req: MarkRequest, by: string): Run {
  return ctx.db.tx(() => {
    requireRun(ctx, runId);
    lineageDb.setMark(ctx.db, runId, {
      mark: req.mark,
      reason: req.reason,
      by,
      at: ctx.now().toISOString(),
    });
    return getRun(ctx, runId);
  });
}

/** `"<project>/<experiment>"` split at its first "/". */
function splitExperiment(ref: string): { project: string; experiment: string } {
  const slash = ref.indexOf("/");
  return { project: ref.slice(0, slash), experiment: ref.slice(slash + 1) };
}

/** `POST /api/notes`: a note on a run or an experiment. */
export function addNote(ctx: Context, req: NoteRequest, by: string): Note {
  return ctx.db.tx(() => {
    let where: { run_id: string | null; project: string; experiment: string | null };
    if (req.run_id) {
      const run = requireRun(ctx, req.run_id);
      where = { run_id: run.id, project: run.project, experiment: run.experiment };
    } else {
      const { project, experiment } = splitExperiment(req.experiment!);
      if (!projectsDb.getExperiment(ctx.db, project, experiment)) {
        throw notFound("Experiment", req.experiment!);
      }
      where = { run_id: null, project, experiment };
    }
    const note: Note = {
      id: ctx.newId("n"),
      ...where,
      text: req.text,
      author: by,
      created_at: ctx.now().toISOString(),
    };
    lineageDb.insertNote(ctx.db, note);
    return note;
  });
}

/** A run's notes, oldest first. */
export function runNotes(ctx: Context, runId: string): Note[] {
  return lineageDb.notesOfRun(ctx.db, runId);
}

/** An experiment's notes and its runs' (the newest MAX_NOTES), oldest first. */
export function experimentNotes(ctx: Context, project: string, experiment: string): Note[] {
  return lineageDb.notesOfExperiment(ctx.db, project, experiment, MAX_NOTES);
}

/** `GET /api/lineage`: the tree of a run, or every tree of an experiment. */
export function getLineage(ctx: Context, q: LineageQuery): Lineage {
  let rootIds: string[];
  let project: string;
  let experiment: string | null;
  if (q.run_id) {
    const run = requireRun(ctx, q.run_id);
    project = run.project;
    experiment = run.experiment;
    rootIds = [rootOf(ctx, run.id)];
  } else {
    ({ project, experiment } = splitExperiment(q.experiment!));
    if (!projectsDb.getExperiment(ctx.db, project, experiment)) {
      throw notFound("Experiment", q.experiment!);
    }
    const ids = lineageDb.runIdsOfExperiment(ctx.db, project, experiment);
    const inside = new Set(ids);
    // A root: no parent, or a parent outside the experiment.
    rootIds = ids.filter((id) => {
      const parent = runsDb.getRun(ctx.db, id)?.parent_run;
      return !parent || !inside.has(parent);
    });
  }
  // Breadth first from the roots, each run once (a cycle cannot form, but the walk is safe).
  const children = new Map<string, string[]>();
  const seen = new Set<string>(rootIds);
  let frontier = rootIds;
  while (frontier.length > 0 && seen.size < MAX_TREE_RUNS) {
    const next: string[] = [];
    for (const row of lineageDb.childrenOf(ctx.db, frontier)) {
      if (seen.has(row.id) || seen.size >= MAX_TREE_RUNS) continue;
      seen.add(row.id);
      next.push(row.id);
      const list = children.get(row.parent_run_id!) ?? [];
      list.push(row.id);
      children.set(row.parent_run_id!, list);
    }
    frontier = next;
  }
  const counts = { runs: 0, kept: 0, discarded: 0 };
  let best: { id: string; value: number; direction: MetricDirection } | null = null;
  const build = (id: string): LineageNode | null => {
    const stored = runsDb.getRun(ctx.db, id);
    if (!stored) return null;
    const run = withPrimaryMetric(ctx, stored);
    counts.runs++;
    if (run.mark?.mark === "kept") {
      counts.kept++;
      const pm = run.primary_metric;
      if (pm && pm.best !== null) {
        const better = best === null ||
          (pm.direction === "min" ? pm.best < best.value : pm.best > best.value);
        if (better) best = { id: run.id, value: pm.best, direction: pm.direction };
      }
    }
    if (run.mark?.mark === "discarded") counts.discarded++;
    const job = run.job_id ? jobsDb.getJob(ctx.db, run.job_id) : null;
    return {
      run_id: run.id,
      name: run.name,
      status: run.status,
      job_id: run.job_id,
      parent_run: run.parent_run,
      resume_from: run.resume_from,
      mark: run.mark,
      primary_metric: run.primary_metric,
      fork_overrides: job?.fork_overrides ?? null,
      commit: lineageDb.getProvenanceCommit(ctx.db, run.id),
      created_at: run.created_at,
      children: (children.get(id) ?? []).map(build).filter((n) => n !== null),
    };
  };
  const roots = rootIds.map(build).filter((n) => n !== null);
  return {
    run_id: q.run_id ?? null,
    project,
    experiment,
    roots,
    ...counts,
    best_kept: (best as { id: string } | null)?.id ?? null,
  };
}

/** The top of a run's tree: its parents followed up (at most MAX_TREE_RUNS steps). */
function rootOf(ctx: Context, runId: string): string {
  let id = runId;
  const seen = new Set([id]);
  for (let i = 0; i < MAX_TREE_RUNS; i++) {
    const parent = runsDb.getRun(ctx.db, id)?.parent_run;
    if (!parent || seen.has(parent) || !runsDb.getRun(ctx.db, parent)) return id;
    seen.add(parent);
    id = parent;
  }
  return id;
}

/** `GET /api/runs/compare/code?runs=a,b`: how run b's code differs from run a's. */
export function compareRunCode(ctx: Context, a: string, b: string): CodeComparison {
  return compareCode(
    { id: a, code: getRunCode(ctx, a) },
    { id: b, code: getRunCode(ctx, b) },
  );
}

/** The Experiments workspace's lineage: the tree of its runs and its notes. */
export function experimentLineage(
  ctx: Context,
  project: string,
  experiment: string,
): { tree: Lineage; notes: Note[] } {
  return {
    tree: getLineage(ctx, { experiment: `${project}/${experiment}` }),
    notes: experimentNotes(ctx, project, experiment),
  };
}
