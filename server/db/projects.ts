/**
 * Projects, experiments and metric definitions, and what the overview pages count over a
 * scope's runs: runs by status, metric keys, the best value of a key.
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { Experiment, MetricDefinition, Project } from "../../protocol/objects.ts";
import type { Database } from "./database.ts";

export function getProject(db: Database, name: string): Project | null {
  return (db.prepare("SELECT * FROM projects WHERE name = ?").get(name) as Project | undefined) ??
    null;
}

export function listProjects(db: Database): Project[] {
  return db.prepare("SELECT * FROM projects ORDER BY name").all() as unknown as Project[];
}

/** Creates the project when missing; returns whether it was created. */
export function ensureProject(db: Database, name: string, at: string): boolean {
  const r = db.prepare(
    "INSERT INTO projects (name, created_at, updated_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING",
  ).run(name, at, at);
  return Number(r.changes) > 0;
}

export function upsertProject(
  db: Database,
  p: { name: string; description?: string; primary_metric?: string; eval_command?: string },
  at: string,
): void {
  ensureProject(db, p.name, at);
  db.prepare(
    `UPDATE projects SET description = COALESCE(?, description),
       primary_metric = COALESCE(?, primary_metric), eval_command = COALESCE(?, eval_command),
       updated_at = ? WHERE name = ?`,
  ).run(p.description ?? null, p.primary_metric ?? null, p.eval_command ?? null, at, p.name);
}

export function getExperiment(db: Database, project: string, name: string): Experiment | null {
  return (db.prepare("SELECT * FROM experiments WHERE project = ? AND name = ?").get(
    project,
    name,
  ) as Experiment | undefined) ?? null;
}

export function listExperiments(db: Database, project?: string): Experiment[] {
  const sql = project
    ? "SELECT * FROM experiments WHERE project = ? ORDER BY seq"
    : "SELECT * FROM experiments ORDER BY project, seq";
  const rows = project ? db.prepare(sql).all(project) : db.prepare(sql).all();
  return (rows as unknown as (Experiment & { seq?: number })[]).map(({ seq: _seq, ...e }) => e);
}

/** Creates the experiment when missing; returns whether it was created. */
export function ensureExperiment(
  db: Database,
  e: { id: string; project: string; name: string; description?: string; primary_metric?: string },
  at: string,
): boolean {
  const r = db.prepare(
    `INSERT INTO experiments (id, project, name, description, primary_metric, created_at, updated_at)
     VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, name) DO NOTHING`,
  ).run(e.id, e.project, e.name, e.description ?? "", e.primary_metric ?? null, at, at);
  return Number(r.changes) > 0;
}

export function updateExperiment(
  db: Database,
  e: { project: string; name: string; description?: string; primary_metric?: string },
  at: string,
): void {
  db.prepare(
    `UPDATE experiments SET description = COALESCE(?, description),
       primary_metric = COALESCE(?, primary_metric), updated_at = ? WHERE project = ? AND name = ?`,
  ).run(e.description ?? null, e.primary_metric ?? null, at, e.project, e.name);
}

interface DefinitionRow {
  scope: MetricDefinition["scope"];
  scope_id: string;
  key: string;
  direction: MetricDirection;
  is_primary: number;
}

export function listMetricDefinitions(db: Database): MetricDefinition[] {
  const rows = db.prepare(
    "SELECT scope, scope_id, key, direction, is_primary FROM metric_definitions ORDER BY scope, scope_id, key",
  ).all() as unknown as DefinitionRow[];
  return rows.map((r) => ({
    scope: r.scope,
    scope_id: r.scope_id,
    key: r.key,
    direction: r.direction,
    primary: r.is_primary === 1,
  }));
}

/** Stores a definition; a primary one demotes the other primaries of the same scope. */
export function putMetricDefinition(db: Database, d: MetricDefinition, at: string): void {
  if (d.primary) {
    db.prepare("UPDATE metric_definitions SET is_primary = 0 WHERE scope = ? AND scope_id = ?").run(
      d.scope,
      d.scope_id,
    );
  }
  db.prepare(
    `INSERT INTO metric_definitions (scope, scope_id, key, direction, is_primary, updated_at)
     VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, scope_id, key) DO UPDATE SET
       direction = excluded.direction, is_primary = excluded.is_primary, updated_at = excluded.updated_at`,
  ).run(d.scope, d.scope_id, d.key, d.direction, d.primary ? 1 : 0, at);
}

/** The runs of a project, or of one experiment of it (`experiment` given). */
export interface RunScopeFilter {
  project: string;
  experiment?: string;
}

function scopeWhere(s: RunScopeFilter): { sql: string; params: string[] } {
  return s.experiment === undefined
    ? { sql: "r.project = ?", params: [s.project] }
    : { sql: "r.project = ? AND r.experiment = ?", params: [s.project, s.experiment] };
}

/** Runs counted by project, experiment (null: outside any) and status, in one pass. */
export function countRunsByStatus(
  db: Database,
): { project: string; experiment: string | null; status: string; n: number }[] {
  return db.prepare(
    "SELECT project, experiment, status, COUNT(*) AS n FROM runs GROUP BY project, experiment, status",
  ).all() as unknown as { project: string; experiment: string | null; status: string; n: number }[];
}

/** The distinct metric keys the runs of a scope have, sorted. */
export function scopeMetricKeys(db: Database, s: RunScopeFilter): string[] {
  const w = scopeWhere(s);
  const rows = db.prepare(
    `SELECT DISTINCT k.key AS key FROM runs r JOIN metric_keys k ON k.run_id = r.id
     WHERE ${w.sql} ORDER BY k.key`,
  ).all(...w.params) as unknown as { key: string }[];
  return rows.map((r) => r.key);
}

/**
 * The best value of `key` over the runs of a scope (the lowest for `min`, the highest for
 * `max`; NaN never counts) with its run and step; null when no run has a value of it.
 */
export function bestScopeValue(
  db: Database,
  s: RunScopeFilter,
  key: string,
  direction: MetricDirection,
): { value: number; run_id: string; step: number | null } | null {
  const w = scopeWhere(s);
  const [col, stepCol, order] = direction === "min"
    ? ["k.min_value", "k.min_step", "ASC"]
    : ["k.max_value", "k.max_step", "DESC"];
  const row = db.prepare(
    `SELECT ${col} AS value, r.id AS run_id, ${stepCol} AS step
     FROM runs r JOIN metric_keys k ON k.run_id = r.id AND k.key = ?
     WHERE ${w.sql} AND ${col} IS NOT NULL ORDER BY ${col} ${order}, r.seq LIMIT 1`,
  ).get(key, ...w.params) as { value: number; run_id: string; step: number | null } | undefined;
  return row ?? null;
}

/**
 * When the runs of a scope last changed: the newest run update (`updated_at`, ISO) and the
 * newest metric point's wall time (Unix seconds); nulls when the scope has no runs or points.
 */
export function scopeLastActivity(
  db: Database,
  s: RunScopeFilter,
): { run_updated_at: string | null; last_wall_time: number | null } {
  const w = scopeWhere(s);
  const runs = db.prepare(`SELECT MAX(r.updated_at) AS at FROM runs r WHERE ${w.sql}`)
    .get(...w.params) as { at: string | null };
  const points = db.prepare(
    `SELECT MAX(k.last_wall_time) AS at FROM runs r JOIN metric_keys k ON k.run_id = r.id
     WHERE ${w.sql}`,
  ).get(...w.params) as { at: number | null };
  return { run_updated_at: runs.at, last_wall_time: points.at };
}
