/**
 * Run log lines: the last `LOG_LINES_KEPT` of each run, stored by seq (a replayed line is
 * ignored) and read as a tail or after a seq.
 */
import type { LogLine } from "../../protocol/objects.ts";
import type { Database } from "./database.ts";

/** How many lines of each run the server keeps; the agent keeps the whole output. */
export const LOG_LINES_KEPT = 2000;

/**
 * Stores lines of one run; a line whose seq is already stored is ignored (replays are
 * harmless). Lines without a seq get the next ones. Returns the lines actually stored.
 */
export function appendLogs(
  db: Database,
  runId: string,
  lines: { seq?: number; ts: string; stream: string; text: string }[],
): LogLine[] {
  if (lines.length === 0) return [];
  let next = lastLogSeq(db, runId) + 1;
  const insert = db.prepare(
    "INSERT INTO logs (run_id, seq, ts, stream, text) VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
  );
  const stored: LogLine[] = [];
  let highest = 0;
  for (const l of lines) {
    const seq = l.seq ?? next;
    next = Math.max(next, seq + 1);
    if (Number(insert.run(runId, seq, l.ts, l.stream, l.text).changes) > 0) {
      stored.push({ seq, ts: l.ts, stream: l.stream, text: l.text });
    }
    highest = Math.max(highest, seq);
  }
  if (highest > LOG_LINES_KEPT) {
    db.prepare("DELETE FROM logs WHERE run_id = ? AND seq <= ?").run(
      runId,
      lastLogSeq(db, runId) - LOG_LINES_KEPT,
    );
  }
  return stored;
}

/** The highest stored line's seq of a run; null when it has none. */
export function newestLogSeq(db: Database, runId: string): number | null {
  const row = db.prepare("SELECT MAX(seq) AS s FROM logs WHERE run_id = ?").get(runId) as {
    s: number | null;
  };
  return row.s;
}

/** The highest stored line's seq of a run; 0 when it has none. */
export function lastLogSeq(db: Database, runId: string): number {
  return newestLogSeq(db, runId) ?? 0;
}

/** Lines after `afterSeq` in order; with no `afterSeq`, the last `limit` lines. */
export function readLogs(
  db: Database,
  runId: string,
  afterSeq: number | undefined,
  limit: number,
): LogLine[] {
  if (afterSeq === undefined) {
    const rows = db.prepare(
      "SELECT seq, ts, stream, text FROM logs WHERE run_id = ? ORDER BY seq DESC LIMIT ?",
    ).all(runId, limit) as unknown as LogLine[];
    return rows.reverse();
  }
  return db.prepare(
    "SELECT seq, ts, stream, text FROM logs WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
  ).all(runId, afterSeq, limit) as unknown as LogLine[];
}
