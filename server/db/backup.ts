import { backup, DatabaseSync } from "node:sqlite";
import type { Database } from "./database.ts";

/** Pages copied per step; between steps the event loop serves requests and ingest. */
export const BACKUP_PAGES_PER_STEP = 256;

export interface BackupResult {
  path: string;
  pages: number;
  bytes: number;
  integrity: "ok";
}

/** `gpuctl-YYYYmmdd-HHMMSS.db` for the given time (UTC). */
export function backupFileName(at: Date): string {
  const p = (n: number) => String(n).padStart(2, "0");
  return `gpuctl-${at.getUTCFullYear()}${p(at.getUTCMonth() + 1)}${p(at.getUTCDate())}-${
    p(at.getUTCHours())
  }${p(at.getUTCMinutes())}${p(at.getUTCSeconds())}.db`;
}

/**
 * Writes a consistent online copy of the database into `dir` with SQLite's backup API, in
 * steps so the server keeps serving, then checks the copy with `PRAGMA integrity_check`.
 */
export async function backupDatabase(db: Database, dir: string, at: Date): Promise<BackupResult> {
  await Deno.mkdir(dir, { recursive: true });
  let path = `${dir}/${backupFileName(at)}`;
  // Two backups in the same second must not overwrite each other.
  for (let i = 1; await exists(path); i++) {
    path = `${dir}/${backupFileName(at).replace(".db", `-${i}.db`)}`;
  }
  // The declared return type is void; the implementation resolves to the page count.
  const pages = Number(await backup(db.sqlite, path, { rate: BACKUP_PAGES_PER_STEP }) ?? 0);
  const copy = new DatabaseSync(path, { readOnly: true });
  try {
    const rows = copy.prepare("PRAGMA integrity_check").all() as { integrity_check: string }[];
    const verdict = rows.map((r) => r.integrity_check).join("; ");
    if (verdict !== "ok") {
      throw new Error(`Backup "${path}" failed its integrity check: ${verdict}`);
    }
  } finally {
    copy.close();
  }
  const { size } = await Deno.stat(path);
  return { path, pages, bytes: size, integrity: "ok" };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}
