/** Sweep and trial records: stored, listed, a trial found by its job, updated, a sweep ended. */
import type { SweepCreate } from "../../protocol/sweeps.ts";
import type { MetricDirection, SweepStatus } from "../../protocol/vocabulary.ts";
import type { ParamValue } from "../../protocol/sweeps.ts";
import type { Database } from "./database.ts";
import { json, pageOf } from "./_rows.ts";

export interface SweepRecord {
  seq: number;
  id: string;
  name: string;
  project: string;
  experiment: string | null;
  spec: SweepCreate;
  metric_key: string;
  direction: MetricDirection;
  status: SweepStatus;
  created_at: string;
  finished_at: string | null;
}

export interface TrialRecord {
  sweep_id: string;
  idx: number;
  params: Record<string, ParamValue>;
  job_id: string | null;
  rung_checked: number | null;
  stopped_at: number | null;
  stop_reason: string | null;
}

interface SweepRow extends Omit<SweepRecord, "spec"> {
  spec: string;
}

interface TrialRow extends Omit<TrialRecord, "params"> {
  params: string;
}

const toSweep = (r: SweepRow): SweepRecord => ({ ...r, spec: json(r.spec, {} as SweepCreate) });
const toTrial = (r: TrialRow): TrialRecord => ({ ...r, params: json(r.params, {}) });

export function insertSweep(
  db: Database,
  s: Omit<SweepRecord, "seq" | "status" | "finished_at">,
  trials: Record<string, ParamValue>[],
): void {
  db.prepare(
    `INSERT INTO sweeps (id, name, project, experiment, spec, metric_key, direction, status,
       created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'RUNNING', ?, ?)`,
  ).run(
    s.id,
    s.name,
    s.project,
    s.experiment,
    JSON.stringify(s.spec),
    s.metric_key,
    s.direction,
    s.created_at,
    s.created_at,
  );
  const ins = db.prepare("INSERT INTO sweep_trials (sweep_id, idx, params) VALUES (?, ?, ?)");
  trials.forEach((params, idx) => ins.run(s.id, idx, JSON.stringify(params)));
}

export function getSweep(db: Database, id: string): SweepRecord | null {
  const row = db.prepare("SELECT * FROM sweeps WHERE id = ?").get(id) as SweepRow | undefined;
  return row ? toSweep(row) : null;
}

/** Newest first, paginated by seq. */
export function listSweeps(
  db: Database,
  filter: { status?: SweepStatus; project?: string },
  limit: number,
  cursor?: number,
) {
  const parts: string[] = [];
  const params: (string | number)[] = [];
  if (filter.status) parts.push("status = ?"), params.push(filter.status);
  if (filter.project) parts.push("project = ?"), params.push(filter.project);
  if (cursor !== undefined) parts.push("seq < ?"), params.push(cursor);
  const rows = db.prepare(
    `SELECT * FROM sweeps ${parts.length ? "WHERE " + parts.join(" AND ") : ""}
     ORDER BY seq DESC LIMIT ?`,
  ).all(...params, limit + 1) as unknown as SweepRow[];
  return pageOf(rows, limit, toSweep);
}

export function sweepsInStatus(db: Database, status: SweepStatus): SweepRecord[] {
  const rows = db.prepare("SELECT * FROM sweeps WHERE status = ? ORDER BY seq").all(
    status,
  ) as unknown as SweepRow[];
  return rows.map(toSweep);
}

export function listTrials(db: Database, sweepId: string): TrialRecord[] {
  const rows = db.prepare("SELECT * FROM sweep_trials WHERE sweep_id = ? ORDER BY idx").all(
    sweepId,
  ) as unknown as TrialRow[];
  return rows.map(toTrial);
}

/** The trial a job runs, if it is one. */
export function trialOfJob(db: Database, jobId: string): TrialRecord | null {
  const row = db.prepare("SELECT * FROM sweep_trials WHERE job_id = ?").get(jobId) as
    | TrialRow
    | undefined;
  return row ? toTrial(row) : null;
}

export function updateTrial(
  db: Database,
  sweepId: string,
  idx: number,
  patch: Partial<Pick<TrialRecord, "job_id" | "rung_checked" | "stopped_at" | "stop_reason">>,
): void {
  const keys = Object.keys(patch) as (keyof typeof patch)[];
  if (!keys.length) return;
  db.prepare(
    `UPDATE sweep_trials SET ${
      keys.map((k) => `${k} = ?`).join(", ")
    } WHERE sweep_id = ? AND idx = ?`,
  ).run(...keys.map((k) => patch[k] ?? null), sweepId, idx);
}

/** Ends a sweep; false when it had already ended. */
export function finishSweep(db: Database, id: string, status: SweepStatus, at: string): boolean {
  return Number(
    db.prepare(
      "UPDATE sweeps SET status = ?, finished_at = ?, updated_at = ? WHERE id = ? AND status = 'RUNNING'",
    ).run(status, at, at, id).changes,
  ) > 0;
}
