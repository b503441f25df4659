/** Schema version 9: each run's code, parents and resumes, keep/discard marks, and notes. */
import type { Migration } from "./mod.ts";

/**
 * Provenance and lineage: the code each run ran (kept apart from `runs`, as a diff may be
 * up to a MiB and run lists never need it), the run a job continues or varies, the
 * checkpoint it resumes from, a run's keep/discard mark, and notes on runs and experiments.
 */
export const migration009Lineage: Migration = {
  version: 9,
  name: "lineage",
  sql: `
CREATE TABLE run_provenance (
  run_id TEXT PRIMARY KEY REFERENCES runs (id),
  kind TEXT NOT NULL CHECK (kind IN ('git', 'files')),
  -- The whole snapshot as JSON (protocol/provenance.ts).
  provenance TEXT NOT NULL,
  captured_at TEXT NOT NULL
);

-- The run a job continues or varies, the checkpoint it starts from (id and path, fixed at
-- submission), and what a fork changed from its parent (JSON: args, env, config).
ALTER TABLE jobs ADD COLUMN parent_run_id TEXT;
ALTER TABLE jobs ADD COLUMN resume_from TEXT;
ALTER TABLE jobs ADD COLUMN resume_from_path TEXT;
ALTER TABLE jobs ADD COLUMN fork_overrides TEXT;

-- Each run of such a job records them, so the tree is one of runs.
ALTER TABLE runs ADD COLUMN parent_run_id TEXT;
ALTER TABLE runs ADD COLUMN resume_from TEXT;
ALTER TABLE runs ADD COLUMN mark TEXT CHECK (mark IN ('kept', 'discarded'));
ALTER TABLE runs ADD COLUMN mark_reason TEXT;
ALTER TABLE runs ADD COLUMN marked_at TEXT;
ALTER TABLE runs ADD COLUMN marked_by TEXT;
CREATE INDEX runs_parent ON runs (parent_run_id);

CREATE TABLE notes (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  -- A run's note names its run (and, for lookups, its project and experiment); an
  -- experiment's note has no run.
  run_id TEXT,
  project TEXT NOT NULL,
  experiment TEXT,
  text TEXT NOT NULL,
  author TEXT NOT NULL,
  created_at TEXT NOT NULL
);
CREATE INDEX notes_run ON notes (run_id);
CREATE INDEX notes_experiment ON notes (project, experiment);
`,
};
