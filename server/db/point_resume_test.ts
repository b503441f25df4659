/**
 * A run's points after a write sequence number (what a resumed metrics stream reads) and its
 * newest sequence number, found from the primary key and the listed rewrites: the same points,
 * in the same order, as filtering every stored point by its sequence number — after appends,
 * rewrites of old steps, steps out of order within a batch, batches grouped in one
 * transaction, and in a store migrated from the schema that indexed `(run_id, seq)`.
 */
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../../tests/assert.ts";
import { type Database, openDatabase } from "./database.ts";
import { lastPointSeq, pointsAfter, type PointWrite, writePoints } from "./metrics.ts";
import { migrate } from "./migrate.ts";
import { MIGRATIONS } from "./migrations/mod.ts";
import { migration011PointResume } from "./migrations/011_point_resume.ts";
import { addSdkRun } from "./_test_rows.ts";

/** Every stored point of the run after `after`, by filtering on the sequence number. */
function oracle(db: Database, runId: string, after: number) {
  return (db.sqlite.prepare(
    "SELECT key, step, value, wall_time, seq FROM metric_points WHERE run_id = ? AND seq > ? ORDER BY seq",
  ).all(runId, after) as {
    key: string;
    step: number;
    value: number;
    wall_time: number;
    seq: number;
  }[])
    .map((r) => ({ ...r }));
}

const maxSeq = (
  db: Database,
  runId: string,
) => ((db.sqlite.prepare("SELECT MAX(seq) AS s FROM metric_points WHERE run_id = ?").get(runId) as {
  s: number | null;
}).s ?? 0);

/** Pages of `limit` from `after` on, as a resumed stream reads them. */
function readPages(db: Database, runId: string, after: number, limit: number) {
  const out = [];
  for (;;) {
    const page = pointsAfter(db, runId, after, limit);
    if (page.length === 0) return out;
    out.push(...page);
    after = page[page.length - 1].seq;
  }
}

function checkEveryResume(db: Database, runId: string): void {
  const last = maxSeq(db, runId);
  assertEquals(lastPointSeq(db, runId), last);
  for (let after = 0; after <= last; after++) {
    const want = oracle(db, runId, after);
    assertEquals(pointsAfter(db, runId, after, 7), want.slice(0, 7), `after ${after}`);
    if (after % 29 === 0) {
      assertEquals(readPages(db, runId, after, 5), want, `pages after ${after}`);
    }
  }
}

/** A small deterministic generator (the test reads the same every time). */
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

Deno.test("points after a sequence number: the same as filtering every point, through appends, rewrites and steps out of order", () => {
  const db = openDatabase(":memory:");
  addSdkRun(db, "r-a");
  addSdkRun(db, "r-b");
  const rnd = random(7);
  const keys = ["loss", "acc", "lr"];
  const next = new Map<string, number>();
  const batch = (): PointWrite[] => {
    const pts: PointWrite[] = [];
    const kind = rnd();
    for (const key of keys) {
      if (rnd() < 0.3) continue;
      const top = next.get(key) ?? 0;
      const n = 1 + Math.floor(rnd() * 6);
      // Mostly appends; some rewrite an older stretch (a run resumed from a checkpoint);
      // some carry steps out of order or twice.
      const from = kind < 0.7 || top === 0 ? top : Math.floor(rnd() * top);
      const steps = Array.from({ length: n }, (_, i) => from + i);
      if (kind > 0.9) steps.reverse();
      if (kind > 0.95) steps.push(steps[0]);
      for (const step of steps) pts.push({ key, step, value: rnd(), wall_time: step });
      next.set(key, Math.max(top, from + n));
    }
    return pts;
  };
  for (let i = 0; i < 60; i++) {
    const run = rnd() < 0.5 ? "r-a" : "r-b";
    if (rnd() < 0.3) {
      // Several batches in one transaction, as the gateway's group commit stores them.
      db.tx(() => {
        for (let j = 0; j < 3; j++) writePoints(db, run, batch());
      });
    } else writePoints(db, run, batch());
  }
  // The history did hold rewrites and steps out of order.
  const listed = db.sqlite.prepare("SELECT COUNT(*) AS n FROM metric_rewrites").get()!.n;
  assert(Number(listed) > 5, `${listed} rewrites listed`);
  checkEveryResume(db, "r-a");
  checkEveryResume(db, "r-b");
  db.close();
});

Deno.test("points after a sequence number inside the transaction that wrote them", () => {
  const db = openDatabase(":memory:");
  addSdkRun(db, "r-a");
  writePoints(db, "r-a", [{ key: "loss", step: 0, value: 1, wall_time: 0 }]);
  db.tx(() => {
    writePoints(db, "r-a", [{ key: "loss", step: 1, value: 2, wall_time: 1 }]);
    writePoints(db, "r-a", [{ key: "loss", step: 2, value: 3, wall_time: 2 }]);
    assertEquals(lastPointSeq(db, "r-a"), 3);
    assertEquals(pointsAfter(db, "r-a", 1, 10).map((p) => p.step), [1, 2]);
  });
  db.close();
});

Deno.test("a store from before the point-resume migration resumes the same: rewritten keys are listed, the index is gone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-resume-" });
  try {
    const path = `${dir}/gpuctl.db`;
    const old = new DatabaseSync(path);
    migrate(old, MIGRATIONS.filter((m) => m.version < migration011PointResume.version));
    old.exec(
      `INSERT INTO projects (name, created_at, updated_at) VALUES ('p', 't', 't');
       INSERT INTO runs (id, job_id, attempt, project, experiment, name, source, status, config,
         env, created_at, updated_at)
       VALUES ('r-a', NULL, 1, 'p', NULL, 'r', 'sdk', 'RUNNING', '{}', '{}', 't', 't')`,
    );
    const put = old.prepare(
      "INSERT OR REPLACE INTO metric_points (run_id, key, step, value, wall_time, seq) VALUES ('r-a', ?, ?, ?, 0, ?)",
    );
    let seq = 0;
    // "loss": steps 0..19, then 5..9 written again (newer sequence numbers below its last
    // step); "acc": steps 0..19 in order.
    for (let s = 0; s < 20; s++) {
      put.run("loss", s, s, ++seq);
      put.run("acc", s, s, ++seq);
    }
    for (let s = 5; s < 10; s++) put.run("loss", s, -s, ++seq);
    for (let s = 20; s < 25; s++) put.run("acc", s, s, ++seq);
    old.exec(
      `INSERT INTO metric_keys (run_id, key, points, first_step, last_step, last_value,
         last_wall_time) VALUES ('r-a', 'loss', 20, 0, 19, 19, 0), ('r-a', 'acc', 25, 0, 24, 24, 0);
       UPDATE sequences SET value = ${seq} WHERE name = 'metric_points'`,
    );
    old.close();

    const db = openDatabase(path);
    assertEquals(
      db.sqlite.prepare("SELECT key, seq, min_step FROM metric_rewrites").all().map((r) => ({
        ...r,
      })),
      [{ key: "loss", seq: 45, min_step: 0 }],
    );
    assertEquals(
      db.sqlite.prepare("SELECT name FROM sqlite_master WHERE name = 'metric_points_seq'").get(),
      undefined,
    );
    checkEveryResume(db, "r-a");
    // New writes after the migration resume the same way.
    writePoints(db, "r-a", [{ key: "loss", step: 3, value: 0, wall_time: 0 }]);
    writePoints(db, "r-a", [{ key: "acc", step: 25, value: 0, wall_time: 0 }]);
    checkEveryResume(db, "r-a");
    db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a page of a run with many keys reads about a page of rows, not a page a key", () => {
  const db = openDatabase(":memory:");
  addSdkRun(db, "r-a");
  const keys = Array.from({ length: 100 }, (_, i) => `k/${i}`);
  db.tx(() => {
    for (let step = 0; step < 200; step++) {
      writePoints(db, "r-a", keys.map((key) => ({ key, step, value: step, wall_time: step })));
    }
  });
  // One key written on long after the others: its points are the last ones.
  writePoints(
    db,
    "r-a",
    Array.from({ length: 300 }, (_, i) => ({ key: "k/7", step: 200 + i, value: i, wall_time: 0 })),
  );
  let rowsRead = 0;
  const prepare = db.prepare.bind(db);
  (db as { prepare: typeof db.prepare }).prepare = (sql: string) => {
    const stmt = prepare(sql);
    if (!sql.includes("ORDER BY step LIMIT ?") && !sql.includes("ORDER BY seq LIMIT ?")) {
      return stmt;
    }
    return {
      all: (...args: unknown[]) => {
        // deno-lint-ignore no-explicit-any
        const rows = (stmt.all as any)(...args);
        rowsRead += rows.length;
        return rows;
      },
    } as unknown as typeof stmt;
  };
  for (const after of [0, 7_000, 19_900, 20_100]) {
    rowsRead = 0;
    assertEquals(pointsAfter(db, "r-a", after, 500), oracle(db, "r-a", after).slice(0, 500));
    assert(rowsRead <= 4 * 500, `${rowsRead} rows read for a page of 500 after ${after}`);
  }
  db.close();
});
