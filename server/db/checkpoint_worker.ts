/**
 * The checkpointer's worker (see `checkpointer.ts`): its own connection to the server's
 * database, a passive checkpoint every `intervalMs`, a report after each that copied pages.
 */
/// <reference lib="deno.worker" />
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { CheckpointReport } from "./checkpointer.ts";

let sqlite: DatabaseSync | null = null;
let passive: StatementSync | null = null;
let timer: ReturnType<typeof setInterval> | undefined;
let said = { log: 0, checkpointed: 0 };

function checkpoint(): void {
  if (!passive) return;
  const t0 = performance.now();
  let report: CheckpointReport;
  try {
    const row = passive.get() as {
      busy: number;
      log: number;
      checkpointed: number;
    };
    // Nothing new in the log since the last one: nothing to say.
    if (row.log === said.log && row.checkpointed === said.checkpointed) return;
    said = row;
    report = {
      log: row.log,
      checkpointed: row.checkpointed,
      ms: performance.now() - t0,
      at: Date.now(),
    };
  } catch (err) {
    report = {
      log: -1,
      checkpointed: -1,
      ms: performance.now() - t0,
      at: Date.now(),
      error: String(err),
    };
  }
  self.postMessage({ type: "report", report });
}

self.onmessage = (e: MessageEvent) => {
  const msg = e.data as
    | { type: "start"; path: string; intervalMs: number; busyTimeoutMs: number }
    | { type: "stop" };
  if (msg.type === "start") {
    sqlite = new DatabaseSync(msg.path);
    sqlite.exec(`PRAGMA busy_timeout = ${msg.busyTimeoutMs}`);
    // This connection only checkpoints; the log's mode and sync level are the database's.
    sqlite.exec("PRAGMA synchronous = NORMAL");
    passive = sqlite.prepare("PRAGMA wal_checkpoint(PASSIVE)");
    timer = setInterval(checkpoint, msg.intervalMs);
  } else {
    clearInterval(timer);
    passive = null;
    sqlite?.close();
    sqlite = null;
    self.postMessage({ type: "closed" });
    self.close();
  }
};
