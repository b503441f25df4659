/**
 * Metric points without the `(run_id, seq)` index: a point costs one B-tree insert, not two.
 * What the index served — a run's points written after a sequence number (live stream resume)
 * and a run's newest sequence number — is found from the primary key instead (see
 * `pointsAfter` in `server/db/metrics.ts`): each key's newest write sequence is kept with its
 * summary, and the writes that went below a key's last step (rewrites, steps out of order) are
 * listed, one row a key and batch, so that everywhere else a key's steps rise with its
 * sequence numbers.
 */
import type { Migration } from "./mod.ts";

export const migration011PointResume: Migration = {
  version: 11,
  name: "point_resume",
  sql: `
-- The sequence number of the key's newest write (0: none recorded).
ALTER TABLE metric_keys ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
UPDATE metric_keys SET last_seq = COALESCE((SELECT MAX(p.seq) FROM metric_points p
  WHERE p.run_id = metric_keys.run_id AND p.key = metric_keys.key), 0);

-- A write to a key whose steps did not all rise above its last step (or not in order): its
-- highest sequence number and its lowest step. Points written after sequence number S lie
-- above the key's last step at S, or at or above the lowest step of a row here with seq > S.
CREATE TABLE metric_rewrites (
  run_id TEXT NOT NULL,
  key TEXT NOT NULL,
  seq INTEGER NOT NULL,
  min_step INTEGER NOT NULL,
  PRIMARY KEY (run_id, key, seq)
) WITHOUT ROWID;

-- Points stored before: a key whose sequence numbers do not rise with its steps gets one row
-- covering all of it.
INSERT INTO metric_rewrites (run_id, key, seq, min_step)
SELECT run_id, key, MAX(seq), MIN(step) FROM (
  SELECT run_id, key, step, seq,
    MAX(seq) OVER (PARTITION BY run_id, key ORDER BY step
      ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
  FROM metric_points
) GROUP BY run_id, key HAVING MAX(before > seq) = 1;

DROP INDEX metric_points_seq;
`,
};
