/**
 * Ledgers for fault and load tests: what a producer sent (a count and an order-free hash of
 * every record) next to what the server's store holds. Equal ledgers mean nothing was lost
 * and nothing was stored twice.
 *
 * Records are canonical strings: `p|run|key|step|value` (a metric point), `l|run|seq|text`
 * (a log line, numbered from 1 in the order the run wrote it), `c|run|file name|step` (a
 * checkpoint), `e|type|message` (an event). The server keeps the last `LOG_LINES_KEPT` lines
 * of a run, so a lines ledger holds those and `n|run|count`, the number of lines the run
 * wrote (the highest stored seq).
 */
import { DatabaseSync } from "node:sqlite";
import { LOG_LINES_KEPT } from "../server/db/logs.ts";

/** FNV-1a over the UTF-16 code units of `s`, from `seed`. */
function fnv1a(s: string, seed: number): number {
  let h = seed >>> 0;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** A multiset of records as a count and two sums of hashes (order does not matter). */
export class Ledger {
  count = 0;
  #a = 0;
  #b = 0;

  add(record: string): void {
    this.count++;
    this.#a = (this.#a + fnv1a(record, 0x811c9dc5)) >>> 0;
    this.#b = (this.#b + fnv1a(record, 0x5bd1e995)) >>> 0;
  }

  get hash(): string {
    return `${this.#a.toString(16).padStart(8, "0")}${this.#b.toString(16).padStart(8, "0")}`;
  }

  /** `count/hash`, for assertEquals and printing. */
  toString(): string {
    return `${this.count}/${this.hash}`;
  }
}

export const pointRecord = (run: string, key: string, step: number, value: number | null) =>
  `p|${run}|${key}|${step}|${value}`;
export const lineRecord = (run: string, seq: number, text: string) => `l|${run}|${seq}|${text}`;
export const lineCountRecord = (run: string, count: number) => `n|${run}|${count}`;

/** The lines ledger of a run that wrote `texts`, in order, as the server keeps them. */
export function linesLedger(run: string, texts: string[], into = new Ledger()): Ledger {
  for (let i = Math.max(0, texts.length - LOG_LINES_KEPT); i < texts.length; i++) {
    into.add(lineRecord(run, i + 1, texts[i]));
  }
  into.add(lineCountRecord(run, texts.length));
  return into;
}
export const checkpointRecord = (run: string, path: string, step: number | null) =>
  `c|${run}|${path.slice(path.lastIndexOf("/") + 1)}|${step}`;
export const eventRecord = (type: string, message: string) => `e|${type}|${message}`;

export type Kind = "points" | "lines" | "checkpoints";

/** Per kind, the ledger of what `dbPath` holds for `runs` (points only of keys `keys` says). */
export function storedLedgers(
  dbPath: string,
  runs: string[],
  keys: (key: string) => boolean = () => true,
): Record<Kind, Ledger> {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    const out = { points: new Ledger(), lines: new Ledger(), checkpoints: new Ledger() };
    const points = db.prepare("SELECT key, step, value FROM metric_points WHERE run_id = ?");
    const lines = db.prepare("SELECT seq, text FROM logs WHERE run_id = ?");
    const ckpts = db.prepare("SELECT path, step FROM checkpoints WHERE run_id = ?");
    for (const run of runs) {
      for (const r of points.iterate(run)) {
        if (!keys(String(r.key))) continue;
        const value = r.value === null ? null : Number(r.value);
        out.points.add(pointRecord(run, String(r.key), Number(r.step), value));
      }
      let count = 0;
      for (const r of lines.iterate(run)) {
        out.lines.add(lineRecord(run, Number(r.seq), String(r.text)));
        count = Math.max(count, Number(r.seq));
      }
      out.lines.add(lineCountRecord(run, count));
      for (const r of ckpts.iterate(run)) {
        out.checkpoints.add(
          checkpointRecord(run, String(r.path), r.step === null ? null : Number(r.step)),
        );
      }
    }
    return out;
  } finally {
    db.close();
  }
}

/** The point records of one run in the store, as a list (for subset checks). */
export function storedRecords(dbPath: string, run: string): { points: string[] } {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    const rows = db.prepare("SELECT key, step, value FROM metric_points WHERE run_id = ?").all(run);
    return {
      points: rows.filter((r) => !String(r.key).startsWith("sys/")).map((r) =>
        pointRecord(run, String(r.key), Number(r.step), r.value === null ? null : Number(r.value))
      ),
    };
  } finally {
    db.close();
  }
}

/**
 * Whether any metric point was ever written twice: each write (an insert or an overwrite)
 * takes the next value of the store's point sequence, so a store where no point was
 * written twice holds exactly as many points as the sequence says.
 */
export function pointWrites(dbPath: string): { points: number; writes: number } {
  const db = new DatabaseSync(dbPath, { readOnly: true });
  try {
    const points = Number(db.prepare("SELECT COUNT(*) AS n FROM metric_points").get()!.n);
    const writes = Number(
      db.prepare("SELECT value FROM sequences WHERE name = 'metric_points'").get()!.value,
    );
    return { points, writes };
  } finally {
    db.close();
  }
}

/** `PRAGMA integrity_check` of a database file (opened read-write, so its WAL is recovered). */
export function integrityCheck(dbPath: string): string {
  const db = new DatabaseSync(dbPath);
  try {
    return String(db.prepare("PRAGMA integrity_check").get()!.integrity_check);
  } finally {
    db.close();
  }
}
