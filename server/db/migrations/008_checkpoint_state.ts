/** Schema version 8: a checkpoint's fingerprint, problem, when it went and when it was written. */
import type { Migration } from "./mod.ts";

/**
 * A checkpoint is its path *and* its content: the fingerprint its agent read, whether its bytes
 * were complete when its job ended, whether its file has since vanished, and when its run last
 * wrote it.
 */
export const migration008CheckpointState: Migration = {
  version: 8,
  name: "checkpoint_state",
  sql: `
-- Hex SHA-256 of the file's size and first and last 64 KiB (a folder: of its files'); NULL when not reported.
ALTER TABLE checkpoints ADD COLUMN fingerprint TEXT;
-- Why its bytes are not a complete file of its format (cut short, never closed); NULL when complete.
ALTER TABLE checkpoints ADD COLUMN problem TEXT;
-- When its agent saw the file gone (ISO 8601); NULL while it exists.
ALTER TABLE checkpoints ADD COLUMN gone_at TEXT;
-- When its current file was registered (server time): the run saving the path again moves it,
-- and evaluations queued before it are of an older file. NULL: as created_at.
ALTER TABLE checkpoints ADD COLUMN written_at TEXT;
`,
};
