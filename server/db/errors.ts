/**
 * SQLite failures that say nothing about the request itself: the store could not take the
 * write now (full, busy, read-only, I/O error) and the same request may succeed later.
 */

/** SQLITE_FULL: the database could not grow (the disk, or a size limit). */
export const SQLITE_FULL = 13;

const TRANSIENT = new Set([
  5, // SQLITE_BUSY
  6, // SQLITE_LOCKED
  7, // SQLITE_NOMEM
  8, // SQLITE_READONLY
  10, // SQLITE_IOERR
  SQLITE_FULL,
  14, // SQLITE_CANTOPEN
]);

/** SQLite's primary result code of an error thrown by node:sqlite, or null for other errors. */
export function sqliteErrorCode(err: unknown): number | null {
  const code = (err as { errcode?: unknown } | null)?.errcode;
  // Extended codes carry the primary one in their low byte (SQLITE_IOERR_WRITE is 778).
  return typeof code === "number" ? code & 0xff : null;
}

/** Whether `err` is a store failure that a later retry of the same write may not meet. */
export function isTransientStoreError(err: unknown): boolean {
  const code = sqliteErrorCode(err);
  return code !== null && TRANSIENT.has(code);
}
