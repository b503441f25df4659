import { assert, assertEquals } from "../../tests/assert.ts";
import { openDatabase } from "./mod.ts";
import { MAIN_PAGES, startCheckpointer } from "./checkpointer.ts";

Deno.test("the checkpointer copies committed pages into the database file while the main connection only commits", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = `${dir}/gpuctl.db`;
    const db = openDatabase(path);
    const errors: string[] = [];
    const checkpointer = startCheckpointer(db, { intervalMs: 5, onError: (e) => errors.push(e) });
    const threshold = () =>
      (db.sqlite.prepare("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number })
        .wal_autocheckpoint;
    assertEquals(threshold(), MAIN_PAGES);
    const before = Deno.statSync(path).size;
    // About 2,000 pages in 20 commits: below the main connection's threshold, so it never
    // checkpoints by itself; whatever reaches the database file, the worker copied.
    db.sqlite.exec("CREATE TABLE filler (id INTEGER PRIMARY KEY, data BLOB)");
    const insert = db.sqlite.prepare("INSERT INTO filler (data) VALUES (?)");
    const blob = new Uint8Array(4000).fill(7);
    for (let tx = 0; tx < 20; tx++) {
      db.tx(() => {
        for (let i = 0; i < 100; i++) insert.run(blob);
      });
    }
    assert(2000 < MAIN_PAGES);
    // Wait (bounded) until the 2,000 rows of 4,000 bytes each are in the database file itself.
    const grown = () => Deno.statSync(path).size - before;
    const done = () => grown() >= 2000 * 4000 && checkpointer.last !== null;
    for (let i = 0; i < 2000 && errors.length === 0 && !done(); i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    assertEquals(errors, []);
    assert(grown() >= 2000 * 4000, `the database file holds the commits (${grown()} bytes more)`);
    assert(checkpointer.last!.checkpointed > 0, "the worker reported what it copied");
    await checkpointer.stop();
    // Stopped: the main connection checkpoints at SQLite's default again.
    assertEquals(threshold(), 1000);
    const rows = db.sqlite.prepare("SELECT COUNT(*) AS n FROM filler").get() as { n: number };
    assertEquals(rows.n, 2000);
    db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
