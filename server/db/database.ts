/**
 * Opening the store: the SQLite file (0600, WAL) with its pragmas and migrations, and the
 * `Database` handle with nested transactions, after-commit hooks and cached statements.
 */
import { DatabaseSync } from "node:sqlite";
import { migrate } from "./migrate.ts";
import { makePrivateFile, PRIVATE_FILE_MODE } from "../private_files.ts";

/** How long a connection waits for a lock held by another connection before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5_000;

/** A write transaction runs `fn` between BEGIN IMMEDIATE and COMMIT, rolling back on throw. */
export interface Database {
  readonly sqlite: DatabaseSync;
  readonly path: string;
  /** Runs `fn` in one write transaction; nested calls join the outer one. */
  tx<T>(fn: () => T): T;
  /**
   * Inside a transaction, runs `fn` in a savepoint: when it throws, what it wrote (and the
   * `afterCommit` callbacks and `onRollback` undo it registered) is undone and the transaction
   * goes on. Outside one, the same as `tx`.
   */
  savepoint<T>(fn: () => T): T;
  /**
   * Registers `fn` to undo in-memory state that belongs to the current transaction (or
   * savepoint): it runs if that is rolled back, newest first. Outside a transaction: nothing.
   */
  onRollback(fn: () => void): void;
  /**
   * Adds a hook that runs inside every transaction just before its COMMIT (state kept in
   * memory during a transaction is written there once); a hook that throws rolls it back.
   */
  beforeCommit(hook: () => void): void;
  /** Adds a hook that runs after every commit, after that transaction's `afterCommit` callbacks. */
  afterEveryCommit(hook: () => void): void;
  /**
   * Runs `fn` once the current transaction commits (at once outside a transaction), so
   * subscribers never hear of data that a rollback then removed.
   */
  afterCommit(fn: () => void): void;
  /** A cached prepared statement for `sql`. */
  prepare(sql: string): ReturnType<DatabaseSync["prepare"]>;
  close(): void;
}

/**
 * Opens (creating when missing) the database file, applies pragmas and migrations. The file
 * and its `-wal` and `-shm` are 0600: SQLite gives the latter two the main file's mode.
 */
export function openDatabase(path: string): Database {
  if (path !== ":memory:") {
    Deno.openSync(path, { create: true, write: true, mode: PRIVATE_FILE_MODE }).close();
    makePrivateFile(path);
  }
  const sqlite = new DatabaseSync(path);
  try {
    sqlite.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    if (path !== ":memory:") {
      const mode = sqlite.prepare("PRAGMA journal_mode = WAL").get() as { journal_mode: string };
      if (mode.journal_mode !== "wal") {
        throw new Error(
          `Cannot use database "${path}": WAL mode refused, got "${mode.journal_mode}"`,
        );
      }
      // Left by an older start with a looser mode.
      makePrivateFile(`${path}-wal`);
      makePrivateFile(`${path}-shm`);
    }
    sqlite.exec("PRAGMA synchronous = NORMAL");
    sqlite.exec("PRAGMA foreign_keys = ON");
    migrate(sqlite);
  } catch (err) {
    sqlite.close();
    throw err;
  }
  return wrap(sqlite, path);
}

function wrap(sqlite: DatabaseSync, path: string): Database {
  const statements = new Map<string, ReturnType<DatabaseSync["prepare"]>>();
  let depth = 0;
  let pending: (() => void)[] = [];
  /** Undo callbacks, one list per open transaction or savepoint (innermost last). */
  const undo: (() => void)[][] = [];
  const beforeHooks: (() => void)[] = [];
  const afterHooks: (() => void)[] = [];
  const rollBack = (level: (() => void)[] | undefined) => {
    if (!level) return;
    for (let i = level.length - 1; i >= 0; i--) level[i]();
  };
  const db: Database = {
    sqlite,
    path,
    tx<T>(fn: () => T): T {
      if (depth > 0) return fn();
      // IMMEDIATE takes the write lock up front: a deferred transaction that later upgrades to
      // a write gets SQLITE_BUSY at once in WAL mode, without honouring busy_timeout.
      sqlite.exec("BEGIN IMMEDIATE");
      depth++;
      undo.push([]);
      try {
        const result = fn();
        for (const hook of beforeHooks) hook();
        sqlite.exec("COMMIT");
        depth--;
        undo.length = 0;
        const run = pending;
        pending = [];
        for (const f of run) f();
        for (const hook of afterHooks) hook();
        return result;
      } catch (err) {
        if (depth > 0) {
          depth = 0;
          pending = [];
          while (undo.length) rollBack(undo.pop());
          if (sqlite.isTransaction) sqlite.exec("ROLLBACK");
        }
        throw err;
      }
    },
    savepoint<T>(fn: () => T): T {
      if (depth === 0) return db.tx(fn);
      sqlite.exec("SAVEPOINT frame");
      const mark = pending.length;
      const level = depth++;
      undo.push([]);
      try {
        const result = fn();
        sqlite.exec("RELEASE frame");
        depth = level;
        const mine = undo.pop()!;
        undo[undo.length - 1].push(...mine);
        return result;
      } catch (err) {
        if (depth > level) {
          depth = level;
          pending.length = Math.min(pending.length, mark);
          rollBack(undo.pop());
          if (sqlite.isTransaction) {
            sqlite.exec("ROLLBACK TO frame");
            sqlite.exec("RELEASE frame");
          }
        }
        throw err;
      }
    },
    onRollback(fn: () => void) {
      if (depth > 0) undo[undo.length - 1].push(fn);
    },
    beforeCommit(hook: () => void) {
      beforeHooks.push(hook);
    },
    afterEveryCommit(hook: () => void) {
      afterHooks.push(hook);
    },
    afterCommit(fn: () => void) {
      if (depth > 0) pending.push(fn);
      else fn();
    },
    prepare(sql: string) {
      let stmt = statements.get(sql);
      if (!stmt) {
        stmt = sqlite.prepare(sql);
        statements.set(sql, stmt);
      }
      return stmt;
    },
    close() {
      statements.clear();
      if (sqlite.isOpen) sqlite.close();
    },
  };
  return db;
}
