/**
 * Budgets: what a token may use (set by an admin), and whose use a job and a sweep count
 * against (the token that submitted it), so GPU-hours, queued jobs and checkpoint bytes are
 * attributed to one token.
 */
import type { Migration } from "./mod.ts";

export const migration010Budgets: Migration = {
  version: 10,
  name: "budgets",
  sql: `
-- JSON {max_gpus, max_gpu_hours_24h, max_queued_jobs, max_trials_per_sweep, max_wall_clock_s,
-- max_checkpoint_bytes}; a field absent or null has no limit; NULL: no limits at all.
ALTER TABLE tokens ADD COLUMN budget TEXT;

-- The token id that submitted the job (a sweep's trials: the sweep's); NULL for jobs stored
-- before budgets existed and for jobs the server makes by itself.
ALTER TABLE jobs ADD COLUMN submitted_by TEXT;
CREATE INDEX jobs_submitted_by ON jobs (submitted_by, status);

ALTER TABLE sweeps ADD COLUMN created_by TEXT;
`,
};
