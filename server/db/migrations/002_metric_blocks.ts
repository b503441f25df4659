/** Schema version 2: sealed blocks of metric points, for reading long series fast. */
import type { Migration } from "./mod.ts";

/**
 * Sealed blocks of metric points: a copy of a series' rows in packed float64 columns, so a
 * long series is read back in a few hundred blobs instead of a million rows. The rows in
 * `metric_points` stay the record; `metric_seals` says how far each series is sealed.
 */
export const migration002MetricBlocks: Migration = {
  version: 2,
  name: "metric_blocks",
  sql: `
CREATE TABLE metric_blocks (
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  first_step INTEGER NOT NULL,
  last_step INTEGER NOT NULL,
  points INTEGER NOT NULL,
  data BLOB NOT NULL,
  PRIMARY KEY (run_id, key, first_step)
) WITHOUT ROWID;

CREATE TABLE metric_seals (
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  sealed_step INTEGER NOT NULL,
  sealed_points INTEGER NOT NULL,
  PRIMARY KEY (run_id, key)
) WITHOUT ROWID;

-- The sealer looks for long series only.
CREATE INDEX metric_keys_points ON metric_keys (points);
`,
};
