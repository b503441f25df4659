/**
 * Token rows (the secret's hash, never the secret): stored, listed, deleted for good, and
 * whether a node has an agent token of its own.
 */
import type { Scope } from "../../protocol/vocabulary.ts";
import type { TokenInfo } from "../../protocol/objects.ts";
import type { Database } from "./database.ts";

/** A token row, with the hash that is compared against presented secrets. */
export interface TokenRow extends Omit<TokenInfo, "budget"> {
  secret_hash: string;
  /** The budget as JSON (read it with budgets.getBudget). */
  budget?: string | null;
}

export function insertToken(
  db: Database,
  t: {
    id: string;
    name: string;
    scope: Scope;
    secret_hash: string;
    created_at: string;
    expires_at?: string | null;
    /** An agent token bound to one node: it can speak only for that node. */
    node_id?: string | null;
  },
): void {
  db.prepare(
    "INSERT INTO tokens (id, name, scope, secret_hash, created_at, expires_at, node_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
  ).run(
    t.id,
    t.name,
    t.scope,
    t.secret_hash,
    t.created_at,
    t.expires_at ?? null,
    t.node_id ?? null,
  );
}

/** Inserts or refreshes a token whose secret lives in a config file (the bootstrap tokens). */
export function upsertToken(
  db: Database,
  t: { id: string; name: string; scope: Scope; secret_hash: string; created_at: string },
): void {
  db.prepare(
    `INSERT INTO tokens (id, name, scope, secret_hash, created_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (id) DO UPDATE SET name = excluded.name, scope = excluded.scope,
       secret_hash = excluded.secret_hash`,
  ).run(t.id, t.name, t.scope, t.secret_hash, t.created_at);
}

export function getToken(db: Database, id: string): TokenRow | null {
  return (db.prepare("SELECT * FROM tokens WHERE id = ?").get(id) as TokenRow | undefined) ?? null;
}

export function listTokens(db: Database): TokenInfo[] {
  const rows = db.prepare(
    "SELECT id, name, scope, node_id, created_at, expires_at, last_used_at, budget FROM tokens ORDER BY created_at, id",
  ).all() as unknown as (Omit<TokenInfo, "budget"> & { budget: string | null })[];
  return rows.map((r) => ({ ...r, budget: r.budget ? JSON.parse(r.budget) : null }));
}

/** Deletes a token and remembers its id, so a config file cannot bring it back. */
export function deleteToken(db: Database, id: string, at: string): boolean {
  const row = getToken(db, id);
  if (!row) return false;
  db.prepare("DELETE FROM tokens WHERE id = ?").run(id);
  db.prepare("INSERT OR REPLACE INTO deleted_tokens (id, name, deleted_at) VALUES (?, ?, ?)")
    .run(id, row.name, at);
  return true;
}

/** When the token with this id was deleted, or null if it never was. */
export function tokenDeletedAt(db: Database, id: string): string | null {
  const row = db.prepare("SELECT deleted_at FROM deleted_tokens WHERE id = ?").get(id) as
    | { deleted_at: string }
    | undefined;
  return row?.deleted_at ?? null;
}

export function touchToken(db: Database, id: string, at: string): void {
  db.prepare("UPDATE tokens SET last_used_at = ? WHERE id = ?").run(at, id);
}

/** Whether some agent token is bound to this node (then only such a token may speak for it). */
export function nodeHasToken(db: Database, nodeId: string): boolean {
  return db.prepare("SELECT 1 FROM tokens WHERE scope = 'agent' AND node_id = ? LIMIT 1").get(
    nodeId,
  ) !== undefined;
}
