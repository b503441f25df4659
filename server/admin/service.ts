/** Administration: the server's health answer and consistent backups of the store. */
import { backupDatabase, type BackupResult, SCHEMA_VERSION } from "../db/mod.ts";
import type { Context } from "../context.ts";

/** The version this server reports. */
export const GPUCTL_VERSION = "0.1.0";

/** `GET /api/health`: up, with the server's version and the store's schema version. */
export function health(): { ok: true; version: string; schema_version: number } {
  return { ok: true, version: GPUCTL_VERSION, schema_version: SCHEMA_VERSION };
}

/** `POST /api/admin/backup`: a consistent copy of the database in the backup folder. */
export function createBackup(ctx: Context): Promise<BackupResult> {
  return backupDatabase(ctx.db, ctx.backupDir, ctx.now());
}
