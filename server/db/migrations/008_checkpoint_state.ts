import type { Migration } from "./mod.ts";

/**
 * A checkpoint is its path *and* its content: the fingerprint its agent read, whether its bytes
 * were complete when its job ended, and whether its file has since vanished.
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
`,
};
