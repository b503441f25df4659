/** Brings a database's schema up to `SCHEMA_VERSION`, one migration per transaction. */
import type { DatabaseSync } from "node:sqlite";
import { MIGRATIONS } from "./migrations/mod.ts";

/** The schema version this code writes; a database above it is refused. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/** Applies every migration above the recorded version, each in its own transaction. */
export function migrate(sqlite: DatabaseSync, migrations = MIGRATIONS): number[] {
  sqlite.exec(
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)",
  );
  const row = sqlite.prepare("SELECT MAX(version) AS v FROM schema_version").get() as {
    v: number | null;
  };
  const current = row.v ?? 0;
  const latest = migrations[migrations.length - 1]?.version ?? 0;
  if (current > latest) {
    throw new Error(
      `Cannot open database: its schema version is ${current}, this gpuctl knows up to ${latest}: ` +
        "upgrade gpuctl, or restore a backup made by this version",
    );
  }
  const applied: number[] = [];
  for (const m of migrations) {
    if (m.version <= current) continue;
    sqlite.exec("BEGIN IMMEDIATE");
    try {
      sqlite.exec(m.sql);
      sqlite.prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)").run(
        m.version,
        m.name,
        new Date().toISOString(),
      );
      sqlite.exec("COMMIT");
    } catch (err) {
      sqlite.exec("ROLLBACK");
      throw new Error(`Cannot apply migration ${m.version} "${m.name}"`, { cause: err });
    }
    applied.push(m.version);
  }
  return applied;
}
