/** Schema version 3: a job's secret env names, and configured tokens that were deleted. */
import type { Migration } from "./mod.ts";

/**
 * Trust boundaries: a job's `secret_env` (names whose values are never shown), and the
 * configured tokens (server.yaml's admin and agent tokens) deleted through the API, so a
 * restart does not install them again.
 */
export const migration003Trust: Migration = {
  version: 3,
  name: "trust",
  sql: `
ALTER TABLE jobs ADD COLUMN secret_env TEXT NOT NULL DEFAULT '[]';

CREATE TABLE deleted_tokens (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  deleted_at TEXT NOT NULL
) WITHOUT ROWID;
`,
};
