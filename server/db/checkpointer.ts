/**
 * WAL checkpoints mostly on a thread of their own. SQLite copies the write-ahead log back into
 * the database file (and syncs both) inside the COMMIT that passes `wal_autocheckpoint` pages:
 * on the server's only thread, where every request and agent frame waits for it (about half
 * of a busy COMMIT's time, and its longest stalls when the disk is slow). Here a worker with a
 * second connection runs passive checkpoints every `intervalMs`: they never take the write
 * lock, so commits go on while the pages are copied and synced.
 *
 * The log starts again from its beginning only when a transaction begins with every page of it
 * copied, which a worker racing the commits rarely sees; so the main connection still
 * checkpoints, after a COMMIT, once the log holds `MAIN_PAGES` pages (four times SQLite's
 * default), and by then the worker has copied nearly all of them. Durability is unchanged: a
 * commit is in the log either way. If the worker fails, the main connection goes back to
 * SQLite's default threshold.
 */
import { BUSY_TIMEOUT_MS, type Database } from "./database.ts";

/** The main connection's own checkpoint threshold while a worker checkpoints (about 16 MB). */
export const MAIN_PAGES = 4_096;
/** SQLite's own threshold, used again once the worker stops. */
const DEFAULT_PAGES = 1_000;
/** How often the worker checkpoints when the log holds new pages. @default */
export const CHECKPOINT_INTERVAL_MS = 200;

/** What the worker reports after each checkpoint that had anything to do. */
export interface CheckpointReport {
  /** Pages in the log, and how many of them are now in the database file. */
  log: number;
  checkpointed: number;
  ms: number;
  /** When it finished (ms since the epoch). */
  at: number;
  error?: string;
}

export interface Checkpointer {
  /** The last checkpoint the worker made (null before the first). */
  readonly last: CheckpointReport | null;
  /** Stops the worker after its current checkpoint and closes its connection. */
  stop(): Promise<void>;
}

/** Starts checkpointing `db`'s log on a worker; the caller stops it before closing `db`. */
export function startCheckpointer(
  db: Database,
  options: { intervalMs?: number; onError?: (message: string) => void } = {},
): Checkpointer {
  db.sqlite.exec(`PRAGMA wal_autocheckpoint = ${MAIN_PAGES}`);
  const worker = new Worker(new URL("./checkpoint_worker.ts", import.meta.url), {
    type: "module",
  });
  let last: CheckpointReport | null = null;
  let stopped: (() => void) | null = null;
  const done = new Promise<void>((resolve) => stopped = resolve);
  worker.onmessage = (e: MessageEvent) => {
    const msg = e.data as { type: "report"; report: CheckpointReport } | { type: "closed" };
    if (msg.type === "closed") {
      stopped?.();
      return;
    }
    last = msg.report;
    if (msg.report.error) options.onError?.(msg.report.error);
  };
  worker.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    options.onError?.(e.message);
    db.sqlite.exec(`PRAGMA wal_autocheckpoint = ${DEFAULT_PAGES}`);
    stopped?.();
  };
  worker.postMessage({
    type: "start",
    path: db.path,
    intervalMs: options.intervalMs ?? CHECKPOINT_INTERVAL_MS,
    busyTimeoutMs: BUSY_TIMEOUT_MS,
  });
  return {
    get last() {
      return last;
    },
    async stop() {
      worker.postMessage({ type: "stop" });
      await done;
      worker.terminate();
      db.sqlite.exec(`PRAGMA wal_autocheckpoint = ${DEFAULT_PAGES}`);
    },
  };
}
