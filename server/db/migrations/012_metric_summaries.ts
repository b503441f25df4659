/**
 * Schema version 12: summaries of each sealed block, so a chart of a long series reads a
 * sixteenth of its points or fewer (see `db/metric_summaries.ts`).
 */
import type { Migration } from "./mod.ts";

export const migration012MetricSummaries: Migration = {
  version: 12,
  name: "metric_summaries",
  sql: `
-- One row per sealed block (same run_id, key, first_step, last_step and points as the block):
-- the block's first and last points and, per 32 points, the lowest and highest finite value
-- and the first NaN, +Infinity and -Infinity, as three float64 columns of \`kept\` points.
-- A rowid table: a summary of a few KB then fills one leaf and one overflow page, where a
-- WITHOUT ROWID row would spill into half as many pages again (its leaves hold less of a row).
CREATE TABLE metric_summaries (
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  first_step INTEGER NOT NULL,
  last_step INTEGER NOT NULL,
  points INTEGER NOT NULL,
  kept INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (run_id, key, first_step)
);

-- The same per 256 points (a block's in well under 1 KB, held in its row: a chart of a million
-- points reads about 50 pages of these).
CREATE TABLE metric_summaries_coarse (
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  first_step INTEGER NOT NULL,
  last_step INTEGER NOT NULL,
  points INTEGER NOT NULL,
  kept INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (run_id, key, first_step)
) WITHOUT ROWID;

-- Every block up to this step has its summaries. NULL: blocks sealed before summaries existed,
-- which the background sealer summarises.
ALTER TABLE metric_seals ADD COLUMN summarized_step INTEGER;
`,
};
