/**
 * Run records: inserted, patched, found by attempt or import folder, listed, counted by group,
 * and selected for `query_runs`; progress only rises.
 */
import type { Run, RunMark } from "../../protocol/objects.ts";
import type { RunStatus } from "../../protocol/vocabulary.ts";
import type { Database } from "./database.ts";
import { json, pageOf, where } from "./_rows.ts";

interface RunRow {
  seq: number;
  id: string;
  job_id: string | null;
  attempt: number;
  project: string;
  experiment: string | null;
  name: string;
  source: Run["source"];
  status: RunStatus;
  config: string;
  env: string;
  step: number | null;
  epoch: number | null;
  max_steps: number | null;
  node_id: string | null;
  slurm_job_id: string | null;
  slurm_node: string | null;
  dropped_points: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  parent_run_id: string | null;
  resume_from: string | null;
  mark: RunMark["mark"] | null;
  mark_reason: string | null;
  marked_at: string | null;
  marked_by: string | null;
}

/** A run as stored, before its primary metric is resolved. */
export type StoredRun = Omit<Run, "primary_metric">;

function toRun(r: RunRow): StoredRun {
  return {
    id: r.id,
    job_id: r.job_id,
    attempt: r.attempt,
    project: r.project,
    experiment: r.experiment,
    name: r.name,
    source: r.source,
    status: r.status,
    step: r.step,
    epoch: r.epoch,
    max_steps: r.max_steps,
    config: json(r.config, {}),
    env: json(r.env, {}),
    node_id: r.node_id,
    ...(r.slurm_job_id ? { slurm: { job_id: r.slurm_job_id, node: r.slurm_node } } : {}),
    dropped_points: r.dropped_points,
    created_at: r.created_at,
    started_at: r.started_at,
    finished_at: r.finished_at,
    parent_run: r.parent_run_id,
    resume_from: r.resume_from,
    mark: r.mark
      ? { mark: r.mark, reason: r.mark_reason ?? "", by: r.marked_by ?? "", at: r.marked_at ?? "" }
      : null,
  };
}

export type NewRun = Pick<
  StoredRun,
  | "id"
  | "job_id"
  | "attempt"
  | "project"
  | "experiment"
  | "name"
  | "source"
  | "status"
  | "config"
  | "env"
  | "max_steps"
  | "created_at"
  | "started_at"
>;

export function insertRun(db: Database, r: NewRun): void {
  db.prepare(
    `INSERT INTO runs (id, job_id, attempt, project, experiment, name, source, status, config, env,
       max_steps, created_at, started_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    r.id,
    r.job_id,
    r.attempt,
    r.project,
    r.experiment,
    r.name,
    r.source,
    r.status,
    JSON.stringify(r.config),
    JSON.stringify(r.env),
    r.max_steps,
    r.created_at,
    r.started_at,
    r.created_at,
  );
}

/** Records which imported folder a run came from, so importing it again finds it. */
export function setImportKey(db: Database, id: string, key: string): void {
  db.prepare("UPDATE runs SET import_key = ? WHERE id = ?").run(key, id);
}

export function getRunByImportKey(db: Database, key: string): StoredRun | null {
  const row = db.prepare("SELECT * FROM runs WHERE import_key = ?").get(key) as RunRow | undefined;
  return row ? toRun(row) : null;
}

export function getRun(db: Database, id: string): StoredRun | null {
  const row = db.prepare("SELECT * FROM runs WHERE id = ?").get(id) as RunRow | undefined;
  return row ? toRun(row) : null;
}

export interface RunFilter {
  project?: string;
  experiment?: string;
  status?: RunStatus;
  job_id?: string;
  source?: Run["source"];
  /** Part of the run's name or id, any case. */
  q?: string;
}

/** The WHERE clause of a filter: equal columns, and `q` as a substring of name or id. */
function runWhere(filter: RunFilter, cursor?: number) {
  const { q, ...equal } = filter;
  const w = where({ ...equal }, cursor);
  if (!q) return w;
  // LIKE is case-insensitive for ASCII; %, _ and \ in the search are taken literally.
  const pattern = `%${q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
  const search = "(name LIKE ? ESCAPE '\\' OR id LIKE ? ESCAPE '\\')";
  return {
    sql: w.sql ? `${w.sql} AND ${search}` : `WHERE ${search}`,
    params: [...w.params, pattern, pattern],
  };
}

export function listRuns(db: Database, filter: RunFilter, limit: number, cursor?: number) {
  const w = runWhere(filter, cursor);
  const rows = db.prepare(`SELECT * FROM runs ${w.sql} ORDER BY seq DESC LIMIT ?`).all(
    ...w.params,
    limit + 1,
  ) as unknown as RunRow[];
  return pageOf(rows, limit, toRun);
}

/** Runs of a filter counted by project, experiment and status, with the latest activity. */
export function countRunsByGroup(db: Database, filter: RunFilter): {
  project: string;
  experiment: string | null;
  status: RunStatus;
  runs: number;
  last_activity_at: string;
  newest_seq: number;
}[] {
  const w = runWhere(filter);
  return db.prepare(
    `SELECT project, experiment, status, COUNT(*) AS runs,
       MAX(COALESCE(finished_at, started_at, created_at)) AS last_activity_at,
       MAX(seq) AS newest_seq
     FROM runs ${w.sql} GROUP BY project, experiment, status`,
  ).all(...w.params) as unknown as ReturnType<typeof countRunsByGroup>;
}

export type RunPatch = Partial<
  Pick<
    StoredRun,
    "status" | "step" | "epoch" | "config" | "env" | "node_id" | "started_at" | "finished_at"
  > & { gpu_indices: number[]; slurm_job_id: string; slurm_node: string }
>;

/** The run of one attempt of a job. */
export function getRunOfAttempt(
  db: Database,
  jobId: string,
  attempt: number,
): (StoredRun & { gpu_indices: number[] }) | null {
  const row = db.prepare("SELECT * FROM runs WHERE job_id = ? AND attempt = ?").get(
    jobId,
    attempt,
  ) as
    | (RunRow & { gpu_indices: string })
    | undefined;
  return row ? { ...toRun(row), gpu_indices: json(row.gpu_indices, []) } : null;
}

export function updateRun(db: Database, id: string, patch: RunPatch, at: string): boolean {
  const sets: string[] = [];
  const params: (string | number | null)[] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) continue;
    sets.push(`${k} = ?`);
    params.push(typeof v === "object" && v !== null ? JSON.stringify(v) : v as string | number);
  }
  sets.push("updated_at = ?");
  params.push(at, id);
  return Number(
    db.prepare(`UPDATE runs SET ${sets.join(", ")} WHERE id = ?`).run(...params).changes,
  ) >
    0;
}

/** Raises the run's step and epoch to at least the given values. */
export function advanceRunProgress(
  db: Database,
  id: string,
  step: number | null,
  epoch: number | null,
): void {
  db.prepare(
    `UPDATE runs SET step = CASE WHEN ? IS NULL THEN step ELSE MAX(COALESCE(step, -1), ?) END,
       epoch = CASE WHEN ? IS NULL THEN epoch ELSE MAX(COALESCE(epoch, -1), ?) END WHERE id = ?`,
  ).run(step, step, epoch, epoch, id);
}

export function addDroppedPoints(db: Database, id: string, n: number): void {
  db.prepare("UPDATE runs SET dropped_points = dropped_points + ? WHERE id = ?").run(n, id);
}

/** What `query_runs` narrows by in SQL before its config and metric conditions. */
export interface RunSelection {
  project?: string;
  experiment?: string;
  statuses?: RunStatus[];
  /** A run id, or null for roots only. */
  parent_run?: string | null;
  mark?: "kept" | "discarded" | "none";
  created_after?: string;
  created_before?: string;
}

/** The newest `cap` runs of a selection. */
export function selectRuns(db: Database, s: RunSelection, cap: number): StoredRun[] {
  const parts: string[] = [];
  const params: (string | number)[] = [];
  const eq = (column: string, value: string | undefined) => {
    if (value === undefined) return;
    parts.push(`${column} = ?`);
    params.push(value);
  };
  eq("project", s.project);
  eq("experiment", s.experiment);
  if (s.statuses?.length) {
    parts.push(`status IN (${s.statuses.map(() => "?").join(", ")})`);
    params.push(...s.statuses);
  }
  if (s.parent_run === null) parts.push("parent_run_id IS NULL");
  else eq("parent_run_id", s.parent_run);
  if (s.mark === "none") parts.push("mark IS NULL");
  else eq("mark", s.mark);
  if (s.created_after) {
    parts.push("created_at >= ?");
    params.push(new Date(s.created_after).toISOString());
  }
  if (s.created_before) {
    parts.push("created_at < ?");
    params.push(new Date(s.created_before).toISOString());
  }
  const sql = `SELECT * FROM runs ${parts.length ? `WHERE ${parts.join(" AND ")}` : ""} ` +
    "ORDER BY seq DESC LIMIT ?";
  return (db.prepare(sql).all(...params, cap) as unknown as RunRow[]).map(toRun);
}
