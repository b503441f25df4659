/**
 * Savepoints and the state a transaction keeps in memory until its commit (the point sequence,
 * known keys' summaries): written once before COMMIT, undone with the savepoint or
 * transaction that changed it.
 */
import { assertEquals, assertThrows } from "../../tests/assert.ts";
import { type Database, openDatabase } from "./database.ts";
import { getKeySummary, listKeySummaries, pointsAfter, writePoints } from "./metrics.ts";
import { addSdkRun } from "./_test_rows.ts";

function storeWithRun(): Database {
  const db = openDatabase(":memory:");
  addSdkRun(db, "r-1", "r");
  return db;
}

const point = (step: number, value: number) => ({ key: "loss", step, value, wall_time: step });
const storedSequence = (db: Database) =>
  (db.sqlite.prepare("SELECT value FROM sequences WHERE name = 'metric_points'").get() as {
    value: number;
  }).value;
/** The summary as the table holds it (not the transaction's copy). */
const storedSummary = (db: Database) => ({
  ...db.sqlite.prepare("SELECT points, last_step, last_value FROM metric_keys WHERE key = 'loss'")
    .get(),
});

Deno.test("a savepoint that throws undoes its rows, its callbacks and its in-memory state; the transaction goes on", () => {
  const db = storeWithRun();
  const heard: string[] = [];
  db.tx(() => {
    writePoints(db, "r-1", [point(1, 1)]);
    writePoints(db, "r-1", [point(2, 2)]);
    assertThrows(() =>
      db.savepoint(() => {
        writePoints(db, "r-1", [point(3, 3), point(4, 4)]);
        db.afterCommit(() => heard.push("undone frame"));
        throw new Error("this frame fails");
      })
    );
    db.savepoint(() => {
      writePoints(db, "r-1", [point(5, 5)]);
      db.afterCommit(() => heard.push("kept frame"));
    });
  });
  assertEquals(heard, ["kept frame"]);
  assertEquals(pointsAfter(db, "r-1", 0, 100).map((p) => [p.step, p.seq]), [
    [1, 1],
    [2, 2],
    [5, 3],
  ]);
  assertEquals(storedSequence(db), 3);
  const s = getKeySummary(db, "r-1", "loss")!;
  assertEquals([s.points, s.last_step, s.last_value, s.max_value], [3, 5, 5, 5]);
  assertEquals(storedSummary(db), { points: 3, last_step: 5, last_value: 5 });
  db.close();
});

Deno.test("a known key's summary and the sequence are written once, before the commit; readers in the transaction see them", () => {
  const db = storeWithRun();
  db.tx(() => writePoints(db, "r-1", [point(1, 1)]));
  let beforeCommit: unknown = null;
  db.beforeCommit(() => beforeCommit ??= storedSummary(db));
  db.tx(() => {
    writePoints(db, "r-1", [point(2, 2)]);
    writePoints(db, "r-1", [point(3, 3)]);
    // The table still has the first transaction's row; readers get the transaction's.
    assertEquals(storedSummary(db), { points: 1, last_step: 1, last_value: 1 });
    assertEquals(getKeySummary(db, "r-1", "loss")!.points, 3);
    assertEquals(listKeySummaries(db, "r-1").map((k) => k.last_step), [3]);
    assertEquals(storedSequence(db), 1);
  });
  assertEquals(storedSummary(db), { points: 3, last_step: 3, last_value: 3 });
  assertEquals(storedSequence(db), 3);
  db.close();
});

Deno.test("a transaction whose commit fails leaves neither rows nor in-memory state behind", () => {
  const db = storeWithRun();
  db.tx(() => writePoints(db, "r-1", [point(1, 1)]));
  let fail = true;
  db.beforeCommit(() => {
    if (fail) throw new Error("the store went away");
  });
  assertThrows(() => db.tx(() => writePoints(db, "r-1", [point(2, 2), point(3, 3)])));
  fail = false;
  assertEquals(getKeySummary(db, "r-1", "loss")!.points, 1);
  db.tx(() => writePoints(db, "r-1", [point(4, 4)]));
  assertEquals(pointsAfter(db, "r-1", 0, 100).map((p) => [p.step, p.seq]), [[1, 1], [4, 2]]);
  assertEquals(storedSummary(db), { points: 2, last_step: 4, last_value: 4 });
  assertEquals(storedSequence(db), 2);
  db.close();
});

Deno.test("an out-of-order step in a later batch of the same transaction recounts from the points", () => {
  const db = storeWithRun();
  db.tx(() => writePoints(db, "r-1", [point(1, 1), point(5, 5)]));
  db.tx(() => {
    writePoints(db, "r-1", [point(6, 6)]);
    writePoints(db, "r-1", [point(3, -1)]);
  });
  const s = getKeySummary(db, "r-1", "loss")!;
  assertEquals([s.points, s.first_step, s.last_step, s.min_value, s.min_step], [4, 1, 6, -1, 3]);
  assertEquals(storedSummary(db), { points: 4, last_step: 6, last_value: 6 });
  db.close();
});
