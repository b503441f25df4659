/** A digest of a whole store, for tests that must show a request changed nothing. */
import type { Database } from "../server/db/mod.ts";

/**
 * A digest of every row of every table, to tell whether a request changed anything. It is
 * computed again only when SQLite's change counter moved (it also counts rolled-back
 * changes, so it alone cannot say "nothing changed", but an unmoved one proves it).
 */
const digests = new WeakMap<Database, { changes: number; digest: string }>();

export async function digest(db: Database): Promise<string> {
  const changes = (db.prepare("SELECT total_changes() AS n").get() as { n: number }).n;
  const known = digests.get(db);
  if (known && known.changes === changes) return known.digest;
  const value = await fullDigest(db);
  digests.set(db, { changes, digest: value });
  return value;
}

async function fullDigest(db: Database): Promise<string> {
  const tables = db.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
  ).all() as { name: string }[];
  const text = tables.map(({ name }) =>
    name +
    JSON.stringify(db.prepare(`SELECT * FROM "${name}"`).all(), (_k, v) =>
      v instanceof Uint8Array ? Array.from(v) : v)
  ).join("\n");
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(hash), (b) => b.toString(16).padStart(2, "0")).join("");
}
