/** Schema version 4: what a job does when its node goes silent, and agent leases and tokens. */
import type { Migration } from "./mod.ts";

/**
 * Fencing and node identity: what a job does when its node goes silent (`on_node_lost`), the
 * earliest time a lost job's next attempt may start (`not_before`, the silent node's lease
 * expiry), the lease each node's agent declared (`fence_after_s`), and agent tokens bound to
 * one node (`tokens.node_id`; NULL for the shared first-contact token and non-agent tokens).
 */
export const migration004Fencing: Migration = {
  version: 4,
  name: "fencing",
  sql: `
ALTER TABLE jobs ADD COLUMN on_node_lost TEXT NOT NULL DEFAULT 'requeue'
  CHECK (on_node_lost IN ('requeue', 'wait'));
ALTER TABLE jobs ADD COLUMN not_before TEXT;
ALTER TABLE nodes ADD COLUMN fence_after_s REAL;
ALTER TABLE tokens ADD COLUMN node_id TEXT;
`,
};
