/**
 * Provenance and lineage in the store: the code snapshot of a run, the parent and checkpoint
 * a run records, keep/discard marks, notes, and the runs of a tree.
 */
import type { RunMark } from "../../protocol/objects.ts";
import type { Provenance } from "../../protocol/provenance.ts";
import type { Note } from "../../protocol/lineage.ts";
import type { Database } from "./database.ts";
import { json } from "./_rows.ts";

/** Keeps a run's code snapshot unless it has one already (the first one sent is the run's). */
export function insertProvenance(db: Database, runId: string, p: Provenance): boolean {
  return Number(
    db.prepare(
      `INSERT INTO run_provenance (run_id, kind, provenance, captured_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (run_id) DO NOTHING`,
    ).run(runId, p.kind, JSON.stringify(p), p.captured_at).changes,
  ) > 0;
}

/** A run's code snapshot; null when none was taken. */
export function getProvenance(db: Database, runId: string): Provenance | null {
  const row = db.prepare("SELECT provenance FROM run_provenance WHERE run_id = ?").get(runId) as
    | { provenance: string }
    | undefined;
  return row ? json<Provenance | null>(row.provenance, null) : null;
}

/** The parent and starting checkpoint a run records (from its job, at dispatch). */
export function setRunLineage(
  db: Database,
  runId: string,
  parentRunId: string | null,
  resumeFrom: string | null,
): void {
  db.prepare("UPDATE runs SET parent_run_id = ?, resume_from = ? WHERE id = ?").run(
    parentRunId,
    resumeFrom,
    runId,
  );
}

/** Marks a run kept or discarded (the latest mark wins). */
export function setMark(db: Database, runId: string, m: RunMark): void {
  db.prepare(
    "UPDATE runs SET mark = ?, mark_reason = ?, marked_by = ?, marked_at = ? WHERE id = ?",
  ).run(m.mark, m.reason, m.by, m.at, runId);
}

/** One node of a tree as the store holds it. */
export interface LineageRow {
  id: string;
  parent_run_id: string | null;
}

/** The runs whose parent is one of `ids`. */
export function childrenOf(db: Database, ids: string[]): LineageRow[] {
  if (ids.length === 0) return [];
  const marks = ids.map(() => "?").join(", ");
  return db.prepare(
    `SELECT id, parent_run_id FROM runs WHERE parent_run_id IN (${marks}) ORDER BY seq`,
  ).all(...ids) as unknown as LineageRow[];
}

/** The ids of an experiment's runs, oldest first. */
export function runIdsOfExperiment(db: Database, project: string, experiment: string): string[] {
  return (db.prepare(
    "SELECT id FROM runs WHERE project = ? AND experiment = ? ORDER BY seq",
  ).all(project, experiment) as unknown as { id: string }[]).map((r) => r.id);
}

/** A note on a run or an experiment, as stored and as the API returns it. */
export type NoteRow = Note;

export function insertNote(db: Database, n: NoteRow): void {
  db.prepare(
    `INSERT INTO notes (id, run_id, project, experiment, text, author, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(n.id, n.run_id, n.project, n.experiment, n.text, n.author, n.created_at);
}

/** A run's notes, oldest first. */
export function notesOfRun(db: Database, runId: string): NoteRow[] {
  return db.prepare(
    `SELECT id, run_id, project, experiment, text, author, created_at FROM notes
     WHERE run_id = ? ORDER BY seq`,
  ).all(runId) as unknown as NoteRow[];
}

/** An experiment's notes and those of its runs, oldest first, at most `limit`. */
export function notesOfExperiment(
  db: Database,
  project: string,
  experiment: string,
  limit: number,
): NoteRow[] {
  return db.prepare(
    `SELECT id, run_id, project, experiment, text, author, created_at FROM notes
     WHERE project = ? AND experiment = ? ORDER BY seq DESC LIMIT ?`,
  ).all(project, experiment, limit).reverse() as unknown as NoteRow[];
}

/** The commit of a run's code snapshot, without reading the diff; null when none. */
export function getProvenanceCommit(db: Database, runId: string): string | null {
  const row = db.prepare(
    "SELECT json_extract(provenance, '$.git.commit') AS c FROM run_provenance WHERE run_id = ?",
  ).get(runId) as { c: string | null } | undefined;
  return row?.c ?? null;
}
