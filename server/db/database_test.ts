import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals, assertThrows } from "../../tests/assert.ts";
import { openDatabase } from "./database.ts";
import { migrate, SCHEMA_VERSION } from "./migrate.ts";
import { backupDatabase, backupFileName } from "./backup.ts";
import { addSdkRun } from "./_test_rows.ts";
import { getKeySummary, lastWritePerStep, readSeries, writePoints } from "./metrics.ts";
import { ensureProject } from "./projects.ts";

async function tempDb() {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-db-" });
  return { dir, path: `${dir}/gpuctl.db` };
}

Deno.test("openDatabase() turns on WAL, foreign keys and a busy timeout", async () => {
  const { dir, path } = await tempDb();
  const db = openDatabase(path);
  try {
    const get = (sql: string) => Object.values(db.sqlite.prepare(sql).get()!)[0];
    assertEquals(get("PRAGMA journal_mode"), "wal");
    assertEquals(get("PRAGMA foreign_keys"), 1);
    assertEquals(get("PRAGMA busy_timeout"), 5000);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("migrations apply once, in order, and are recorded in schema_version", () => {
  const sqlite = new DatabaseSync(":memory:");
  const steps = [
    { version: 1, name: "a", sql: "CREATE TABLE a (x)" },
    { version: 2, name: "b", sql: "CREATE TABLE b (x)" },
  ];
  assertEquals(migrate(sqlite, steps.slice(0, 1)), [1]);
  assertEquals(migrate(sqlite, steps), [2]);
  assertEquals(migrate(sqlite, steps), []);
  const versions = sqlite.prepare("SELECT version FROM schema_version ORDER BY version").all();
  assertEquals(versions.map((r) => r.version), [1, 2]);
});

Deno.test("a failing migration leaves the database at the previous version", () => {
  const sqlite = new DatabaseSync(":memory:");
  const steps = [
    { version: 1, name: "a", sql: "CREATE TABLE a (x)" },
    { version: 2, name: "broken", sql: "CREATE TABLE c (x); CREATE TABLE a (x)" },
  ];
  assertThrows(() => migrate(sqlite, steps), 'Cannot apply migration 2 "broken"');
  const v = sqlite.prepare("SELECT MAX(version) AS v FROM schema_version").get()!;
  assertEquals(v.v, 1);
  const tables = sqlite.prepare("SELECT name FROM sqlite_master WHERE name = 'c'").all();
  assertEquals(tables.length, 0);
});

Deno.test("a database newer than the code refuses to open with a clear message", async () => {
  const { dir, path } = await tempDb();
  openDatabase(path).close();
  const raw = new DatabaseSync(path);
  raw.prepare("INSERT INTO schema_version VALUES (?, 'future', 'x')").run(SCHEMA_VERSION + 1);
  raw.close();
  assertThrows(
    () => openDatabase(path),
    `its schema version is ${SCHEMA_VERSION + 1}, this gpuctl knows up to ${SCHEMA_VERSION}`,
  );
  await Deno.remove(dir, { recursive: true });
});

Deno.test("tx() rolls back everything when the function throws", () => {
  const db = openDatabase(":memory:");
  assertThrows(() =>
    db.tx(() => {
      ensureProject(db, "p", "t");
      throw new Error("boom");
    }), "boom");
  assertEquals(db.sqlite.prepare("SELECT COUNT(*) AS n FROM projects").get()!.n, 0);
  db.close();
});

Deno.test("writePoints() keeps the newest write per key and step, NaN included", () => {
  const db = openDatabase(":memory:");
  addSdkRun(db, "r-1", "r");
  db.tx(() => {
    writePoints(db, "r-1", [
      { key: "loss", step: 0, value: 3, wall_time: 1 },
      { key: "loss", step: 1, value: 2, wall_time: 2 },
      { key: "loss", step: 2, value: NaN, wall_time: 3 },
    ]);
    writePoints(db, "r-1", [{ key: "loss", step: 1, value: 5, wall_time: 4 }]);
  });
  const s = readSeries(db, "r-1", "loss");
  assertEquals(s.steps, [0, 1, 2]);
  assertEquals(s.values.slice(0, 2), [3, 5]);
  assert(Number.isNaN(s.values[2]));
  const sum = getKeySummary(db, "r-1", "loss")!;
  assertEquals([sum.points, sum.min_value, sum.max_value, sum.max_step], [3, 3, 5, 1]);
  assert(Number.isNaN(sum.last_value));
  db.close();
});

Deno.test("backupFileName() is gpuctl-YYYYmmdd-HHMMSS.db", () => {
  assertEquals(backupFileName(new Date("2026-03-04T05:06:07Z")), "gpuctl-20260304-050607.db");
});

Deno.test("backupDatabase() writes a copy that passes integrity_check", async () => {
  const { dir, path } = await tempDb();
  const db = openDatabase(path);
  db.tx(() => ensureProject(db, "p", "t"));
  const result = await backupDatabase(db, `${dir}/backups`, new Date("2026-01-02T03:04:05Z"));
  assertEquals(result.path, `${dir}/backups/gpuctl-20260102-030405.db`);
  const second = await backupDatabase(db, `${dir}/backups`, new Date("2026-01-02T03:04:05Z"));
  assert(second.path.endsWith("-1.db"), second.path);
  const copy = new DatabaseSync(result.path);
  assertEquals(copy.prepare("SELECT name FROM projects").get()!.name, "p");
  copy.close();
  db.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("lastWritePerStep() keeps the last point per key and step within a batch", () => {
  const rising = [
    { key: "a", step: 1, value: 1, wall_time: 0 },
    { key: "b", step: 1, value: 2, wall_time: 0 },
    { key: "a", step: 2, value: 3, wall_time: 0 },
  ];
  assertEquals(lastWritePerStep(rising), rising);
  const repeated = [
    { key: "a", step: 1, value: 1, wall_time: 0 },
    { key: "a", step: 2, value: 2, wall_time: 0 },
    { key: "a", step: 1, value: 9, wall_time: 0 },
  ];
  assertEquals(lastWritePerStep(repeated).map((p) => [p.step, p.value]), [[2, 2], [1, 9]]);
});
