/**
 * The event log: events stored, listed newest first, read after an id (SSE resume and waits),
 * looked up by type, and counted by severity.
 */
import type { EventRecord } from "../../protocol/objects.ts";
import type { Severity } from "../../protocol/vocabulary.ts";
import { severitiesAtLeast } from "../../protocol/severity.ts";
import type { Database } from "./database.ts";
import { json } from "./_rows.ts";

export interface NewEvent {
  ts: string;
  type: string;
  severity: Severity;
  run_id?: string | null;
  job_id?: string | null;
  node_id?: string | null;
  message: string;
  data?: Record<string, unknown>;
}

interface EventRow extends Omit<EventRecord, "data"> {
  data: string;
}

const toEvent = (r: EventRow): EventRecord => ({ ...r, data: json(r.data, {}) });

export function insertEvent(db: Database, e: NewEvent): EventRecord {
  const row = db.prepare(
    `INSERT INTO events (ts, type, severity, run_id, job_id, node_id, message, data)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING *`,
  ).get(
    e.ts,
    e.type,
    e.severity,
    e.run_id ?? null,
    e.job_id ?? null,
    e.node_id ?? null,
    e.message,
    JSON.stringify(e.data ?? {}),
  ) as unknown as EventRow;
  return toEvent(row);
}

export interface EventFilter {
  run_id?: string;
  job_id?: string;
  node_id?: string;
  type?: string;
  severity?: Severity;
}

function filterSql(f: EventFilter): { sql: string; params: string[] } {
  const parts: string[] = [];
  const params: string[] = [];
  for (const k of ["run_id", "job_id", "node_id", "type"] as const) {
    if (f[k]) {
      parts.push(`${k} = ?`);
      params.push(f[k]!);
    }
  }
  if (f.severity) {
    // A severity filter means "at least this severe".
    const levels = severitiesAtLeast(f.severity);
    parts.push(`severity IN (${levels.map(() => "?").join(", ")})`);
    params.push(...levels);
  }
  return { sql: parts.join(" AND "), params };
}

/** Whether any event of this type is stored. */
export function hasEventType(db: Database, type: string): boolean {
  return db.prepare("SELECT 1 FROM events WHERE type = ? LIMIT 1").get(type) !== undefined;
}

/** Newest first, paginated by id. */
export function listEvents(db: Database, f: EventFilter, limit: number, beforeId?: number) {
  const w = filterSql(f);
  const parts = [w.sql, beforeId !== undefined ? "id < ?" : ""].filter(Boolean);
  const rows = db.prepare(
    `SELECT * FROM events ${
      parts.length ? "WHERE " + parts.join(" AND ") : ""
    } ORDER BY id DESC LIMIT ?`,
  ).all(
    ...w.params,
    ...(beforeId !== undefined ? [beforeId] : []),
    limit + 1,
  ) as unknown as EventRow[];
  const more = rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(toEvent);
  return { items, next_cursor: more ? String(items[items.length - 1].id) : null };
}

/** Events after `afterId`, oldest first (SSE resume). */
export function eventsAfter(
  db: Database,
  f: EventFilter,
  afterId: number,
  limit: number,
): EventRecord[] {
  const w = filterSql(f);
  const rows = db.prepare(
    `SELECT * FROM events WHERE id > ? ${w.sql ? "AND " + w.sql : ""} ORDER BY id LIMIT ?`,
  ).all(afterId, ...w.params, limit) as unknown as EventRow[];
  return rows.map(toEvent);
}

/**
 * The oldest event after `afterId` that passes `f` and is of one of `types` (and, with
 * `sweepId`, whose data names that sweep), or null: one indexed look, whatever the log's size.
 */
export function firstEventOfTypes(
  db: Database,
  f: EventFilter,
  types: readonly string[],
  afterId: number,
  sweepId?: string,
): EventRecord | null {
  if (types.length === 0) return null;
  const w = filterSql(f);
  const row = db.prepare(
    `SELECT * FROM events WHERE id > ? AND type IN (${types.map(() => "?").join(", ")})
     ${w.sql ? "AND " + w.sql : ""}
     ${sweepId === undefined ? "" : "AND json_extract(data, '$.sweep_id') = ?"}
     ORDER BY id LIMIT 1`,
  ).get(afterId, ...types, ...w.params, ...(sweepId === undefined ? [] : [sweepId])) as
    | EventRow
    | undefined;
  return row ? toEvent(row) : null;
}

/** The newest event id (0 when there is none). */
export function lastEventId(db: Database): number {
  const row = db.prepare("SELECT MAX(id) AS id FROM events").get() as { id: number | null };
  return row.id ?? 0;
}

/** Events of the given severities since `since` (ISO), counted by severity. */
export function countSince(
  db: Database,
  since: string,
  severities: Severity[],
): Record<string, number> {
  const rows = db.prepare(
    `SELECT severity, COUNT(*) AS n FROM events WHERE ts >= ? AND severity IN (${
      severities.map(() => "?").join(", ")
    }) GROUP BY severity`,
  ).all(since, ...severities) as { severity: string; n: number }[];
  return Object.fromEntries(rows.map((r) => [r.severity, r.n]));
}
