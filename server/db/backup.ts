/**
 * Online backups of the store: a consistent copy written in steps with SQLite's backup API
 * while the server keeps serving, checked, into a private file.
 */
import { backup, DatabaseSync } from "node:sqlite";
import type { Database } from "./database.ts";
import { makePrivateDir, makePrivateFile, PRIVATE_FILE_MODE } from "../private_files.ts";

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
 * The copy is one self-contained file (rollback journal, no `-wal`/`-shm` beside it), 0600
 * in a 0700 folder.
 */
export async function backupDatabase(db: Database, dir: string, at: Date): Promise<BackupResult> {
  makePrivateDir(dir);
  // Created empty first (an empty file is an empty database), so it is private from the
  // start; SQLite would create it with its own default mode. Two backups in the same second
  // must not overwrite each other: the second gets a suffix.
  let path = `${dir}/${backupFileName(at)}`;
  for (let i = 1; !(await createPrivate(path)); i++) {
    path = `${dir}/${backupFileName(at).replace(".db", `-${i}.db`)}`;
  }
  let pages: number;
  try {
    // The declared return type is void; the implementation resolves to the page count.
    pages = Number(await backup(db.sqlite, path, { rate: BACKUP_PAGES_PER_STEP }) ?? 0);
  } catch (err) {
    await Deno.remove(path).catch(() => {});
    throw err;
  }
  // The pages carry the source's WAL flag; a copy left in WAL mode would grow an empty
  // -wal and -shm beside it at each open. DELETE mode keeps it one file.
  const copy = new DatabaseSync(path);
  try {
    copy.exec("PRAGMA journal_mode = DELETE");
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

/** Creates an empty 0600 file; false when the path is taken. */
async function createPrivate(path: string): Promise<boolean> {
  try {
    await Deno.writeFile(path, new Uint8Array(), { createNew: true, mode: PRIVATE_FILE_MODE });
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return false;
    throw err;
  }
  makePrivateFile(path);
  return true;
}
