import { assertEquals } from "../../tests/assert.ts";
import { DatabaseSync } from "node:sqlite";
import { isTransientStoreError, SQLITE_FULL, sqliteErrorCode } from "./errors.ts";

function errorOf(fn: () => void): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error("expected a failure");
}

Deno.test("a database that cannot grow is a transient store error; a bad statement is not", () => {
  const db = new DatabaseSync(":memory:");
  db.exec("CREATE TABLE t (x TEXT NOT NULL); PRAGMA max_page_count = 2");
  const full = errorOf(() => {
    for (let i = 0; i < 100; i++) db.prepare("INSERT INTO t VALUES (?)").run("x".repeat(1000));
  });
  assertEquals(sqliteErrorCode(full), SQLITE_FULL);
  assertEquals(isTransientStoreError(full), true);
  const constraint = errorOf(() => db.prepare("INSERT INTO t VALUES (NULL)").run());
  assertEquals(isTransientStoreError(constraint), false);
  assertEquals(isTransientStoreError(new TypeError("a bug")), false);
  db.close();
});
