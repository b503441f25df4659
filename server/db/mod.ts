/**
 * The store: one SQLite file, and every SQL statement of the server behind named functions.
 * Routes, services and tools call these; nothing else writes SQL.
 */
export { BUSY_TIMEOUT_MS, type Database, openDatabase } from "./database.ts";
export { migrate, SCHEMA_VERSION } from "./migrate.ts";
export { type Migration, MIGRATIONS } from "./migrations/mod.ts";
export { backupDatabase, type BackupResult } from "./backup.ts";
export { isTransientStoreError, SQLITE_FULL, sqliteErrorCode } from "./errors.ts";
export * as tokens from "./tokens.ts";
export * as projects from "./projects.ts";
export * as jobs from "./jobs.ts";
export * as runs from "./runs.ts";
export * as metrics from "./metrics.ts";
export * as metricBlocks from "./metric_blocks.ts";
export * as logs from "./logs.ts";
export * as events from "./events.ts";
export * as checkpoints from "./checkpoints.ts";
export * as evaluations from "./evaluations.ts";
export * as nodes from "./nodes.ts";
export * as cursors from "./cursors.ts";
export * as sweeps from "./sweeps.ts";
export * as lineage from "./lineage.ts";
export * as budgets from "./budgets.ts";
