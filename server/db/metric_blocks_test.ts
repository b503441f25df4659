import { assert, assertEquals } from "../../tests/assert.ts";
import { openDatabase } from "./database.ts";
import { migrate } from "./migrate.ts";
import { readSeries, writePoints } from "./metrics.ts";
import {
  appendSeriesChunk,
  BLOCK_POINTS,
  ColumnsBuilder,
  readSeriesColumns,
  sealNext,
} from "./metric_blocks.ts";

function memoryDb() {
  const db = openDatabase(":memory:");
  migrate(db.sqlite);
  return db;
}

// Steps with gaps, and values that SQLite cannot hold as plain REALs (NaN) or that must stay
// exact (±Infinity, long fractions).
function points(from: number, to: number, key = "loss") {
  const out = [];
  for (let i = from; i < to; i++) {
    const value = i % 1000 === 7 ? NaN : i % 1000 === 8 ? -Infinity : 1 / (i + 3);
    out.push({ key, step: i * 2, value, wall_time: 1.7e9 + i / 3 });
  }
  return out;
}

function write(db: ReturnType<typeof memoryDb>, pts: ReturnType<typeof points>) {
  db.tx(() => writePoints(db, "r", pts));
}

/** The series as rows give it, to compare against what blocks give. */
function fromRows(db: ReturnType<typeof memoryDb>, key = "loss") {
  const s = readSeries(db, "r", key);
  return { steps: s.steps, values: s.values, wall_times: s.wall_times };
}

function plain(c: ReturnType<typeof readSeriesColumns>) {
  return {
    steps: Array.from(c.steps.subarray(0, c.length)),
    values: Array.from(c.values.subarray(0, c.length)),
    wall_times: Array.from(c.wallTimes.subarray(0, c.length)),
  };
}

const blockRows = (db: ReturnType<typeof memoryDb>) =>
  db.sqlite.prepare("SELECT first_step, last_step, points FROM metric_blocks ORDER BY first_step")
    .all() as { first_step: number; last_step: number; points: number }[];

Deno.test("a sealed series reads back exactly what its rows hold, NaN and -Infinity included", () => {
  const db = memoryDb();
  write(db, points(0, 5000));
  write(db, points(5000, 10_000));
  const first = readSeriesColumns(db, "r", "loss");
  assertEquals(plain(first), fromRows(db));
  assertEquals(sealNext(db, "r", "loss", 100), 2, "two whole blocks; the rest stays rows");
  assertEquals(blockRows(db).map((b) => b.points), [BLOCK_POINTS, BLOCK_POINTS]);
  const sealed = readSeriesColumns(db, "r", "loss");
  assertEquals(plain(sealed), fromRows(db));
  assert(Number.isNaN(sealed.values[7]) && sealed.values[8] === -Infinity);
  // Points appended later come from rows after the blocks; sealing again adds the next block.
  write(db, points(10_000, 13_000));
  const grown = readSeriesColumns(db, "r", "loss");
  assertEquals(plain(grown), fromRows(db));
  assertEquals(sealNext(db, "r", "loss", 100), 1);
  assertEquals(plain(readSeriesColumns(db, "r", "loss")), fromRows(db));
  db.close();
});

Deno.test("a read that starts inside a block reads rows up to the next block, then blocks", () => {
  const db = memoryDb();
  write(db, points(0, 4 * BLOCK_POINTS));
  sealNext(db, "r", "loss", 100);
  const out = new ColumnsBuilder(0);
  const after = 2 * 100; // steps are even: inside the first block
  const first = appendSeriesChunk(db, "r", "loss", after, Infinity, 65_536, out);
  assertEquals([first.added, first.fromBlocks], [BLOCK_POINTS - 101, 0]);
  assertEquals(out.lastStep(), 2 * (BLOCK_POINTS - 1), "up to the end of the first block");
  const rest = appendSeriesChunk(db, "r", "loss", out.lastStep(), Infinity, 65_536, out);
  assertEquals([rest.added, rest.fromBlocks], [3 * BLOCK_POINTS, 3 * BLOCK_POINTS]);
  const all = fromRows(db);
  assertEquals(Array.from(out.values.subarray(0, out.length)), all.values.slice(101));
  db.close();
});

Deno.test("a rewrite inside a sealed block drops that block and the ones after it, not before", () => {
  const db = memoryDb();
  write(db, points(0, 3 * BLOCK_POINTS + 10));
  sealNext(db, "r", "loss", 100);
  assertEquals(blockRows(db).length, 3);
  // Training resumed from a checkpoint rewrites steps from the middle of the second block.
  const resumeAt = BLOCK_POINTS + 100;
  write(
    db,
    points(resumeAt, resumeAt + 50).map((p) => ({ ...p, value: p.value * 10 })),
  );
  assertEquals(blockRows(db).length, 1, "only the first block is still sealed");
  assertEquals(
    db.sqlite.prepare("SELECT first_step FROM metric_summaries").all().map((r) => r.first_step),
    [0],
    "and only its summary",
  );
  const s = readSeriesColumns(db, "r", "loss");
  assertEquals(plain(s), fromRows(db));
  assertEquals(s.values[resumeAt + 1], 10 / (resumeAt + 4));
  db.close();
});

Deno.test("a new step between sealed steps drops the blocks from there", () => {
  const db = memoryDb();
  write(db, points(0, 2 * BLOCK_POINTS));
  sealNext(db, "r", "loss", 100);
  write(db, [{ key: "loss", step: 11, value: 42, wall_time: 1 }]); // steps are even: 11 is new
  assertEquals(blockRows(db).length, 0);
  const s = readSeriesColumns(db, "r", "loss");
  assertEquals(plain(s), fromRows(db));
  assertEquals([s.steps[6], s.values[6], s.length], [11, 42, 2 * BLOCK_POINTS + 1]);
  db.close();
});

Deno.test("blocks that disagree with their seal are dropped and the rows read instead", () => {
  const db = memoryDb();
  write(db, points(0, 2 * BLOCK_POINTS));
  sealNext(db, "r", "loss", 100);
  db.sqlite.exec("DELETE FROM metric_blocks WHERE first_step = 0");
  // Even when they cannot be dropped now (writes refused, as on a full disk).
  db.sqlite.exec("PRAGMA query_only = ON");
  assertEquals(plain(readSeriesColumns(db, "r", "loss")), fromRows(db));
  db.sqlite.exec("PRAGMA query_only = OFF");
  assertEquals(plain(readSeriesColumns(db, "r", "loss")), fromRows(db));
  assertEquals(blockRows(db).length, 0);
  db.close();
});

Deno.test("keys are sealed apart: a write to one key leaves another's blocks", () => {
  const db = memoryDb();
  write(db, [...points(0, BLOCK_POINTS, "a"), ...points(0, BLOCK_POINTS, "b")]);
  for (const key of ["a", "b"]) sealNext(db, "r", key, 100);
  write(db, [{ key: "a", step: 0, value: 1, wall_time: 1 }]);
  const left = db.sqlite.prepare("SELECT key FROM metric_blocks").all().map((r) => r.key);
  assertEquals(left, ["b"]);
  assertEquals(plain(readSeriesColumns(db, "r", "a")), fromRows(db, "a"));
  db.close();
});
