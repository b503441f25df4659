/** Schema version 5: a checkpoint's file, host and overwriting run; a job's `stop_on` events. */
import type { Migration } from "./mod.ts";

/**
 * What a checkpoint file was when its run registered it, and which host it lives on, so a
 * later run writing the same path marks the earlier record overwritten instead of silently
 * taking its place; and the anomaly events a job asked to be stopped on.
 */
export const migration005CheckpointFilesStopOn: Migration = {
  version: 5,
  name: "checkpoint_files_stop_on",
  sql: `
-- Modification time of the file when it was registered, ISO 8601; NULL when not reported.
ALTER TABLE checkpoints ADD COLUMN mtime TEXT;
-- Paths are per host: the node's hostname, else the SDK's hostname; NULL when unknown.
ALTER TABLE checkpoints ADD COLUMN host TEXT;
-- The run that registered the same path later (its file replaced this one), and when.
ALTER TABLE checkpoints ADD COLUMN overwritten_by_run TEXT;
ALTER TABLE checkpoints ADD COLUMN overwritten_at TEXT;
CREATE INDEX checkpoints_path ON checkpoints (path);

-- A JSON array of anomaly event types that cancel the job when raised on its run.
ALTER TABLE jobs ADD COLUMN stop_on TEXT NOT NULL DEFAULT '[]';
`,
};
