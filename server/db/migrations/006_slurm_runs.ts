/** Schema version 6: a run's Slurm job id and the host Slurm ran it on. */
import type { Migration } from "./mod.ts";

/**
 * Runs handed to a Slurm pool: the Slurm job id (kept from submission on, so a person can
 * find the job in `squeue` and `sacct`) and the host Slurm chose once it started it.
 */
export const migration006SlurmRuns: Migration = {
  version: 6,
  name: "slurm_runs",
  sql: `
-- The Slurm job id of the run's attempt; NULL for runs not handed to Slurm.
ALTER TABLE runs ADD COLUMN slurm_job_id TEXT;
-- The host Slurm ran it on; NULL until it started.
ALTER TABLE runs ADD COLUMN slurm_node TEXT;
`,
};
