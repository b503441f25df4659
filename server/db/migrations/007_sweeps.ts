/** Schema version 7: sweeps, their trials, and the config a job's runs record. */
import type { Migration } from "./mod.ts";

/**
 * Sweeps and their trials; and the config a job's runs record (a trial's parameters), so a
 * run of a sweep shows what it was given.
 */
export const migration007Sweeps: Migration = {
  version: 7,
  name: "sweeps",
  sql: `
CREATE TABLE sweeps (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  id TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  project TEXT NOT NULL,
  experiment TEXT,
  -- The request as JSON (parameters, method, base submission, early stopping).
  spec TEXT NOT NULL,
  metric_key TEXT NOT NULL,
  direction TEXT NOT NULL CHECK (direction IN ('min', 'max')),
  status TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  finished_at TEXT
);

CREATE TABLE sweep_trials (
  sweep_id TEXT NOT NULL REFERENCES sweeps (id),
  idx INTEGER NOT NULL,
  params TEXT NOT NULL,
  -- NULL until the trial's job is submitted (at most max_parallel trials are active at once).
  job_id TEXT,
  -- The last rung (a step) this trial was compared at, and the rung that stopped it.
  rung_checked INTEGER,
  stopped_at INTEGER,
  stop_reason TEXT,
  PRIMARY KEY (sweep_id, idx)
);
CREATE INDEX sweep_trials_job ON sweep_trials (job_id);

-- The config each run of the job records, JSON.
ALTER TABLE jobs ADD COLUMN config TEXT NOT NULL DEFAULT '{}';
`,
};
