/** An online backup taken while points stream in is consistent and the server keeps ingesting. */
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "./assert.ts";
import { withHarness } from "./_harness.ts";

Deno.test("a backup during a write load passes integrity_check and holds a consistent prefix", async () => {
  await withHarness(async (h) => {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { project: "load" } })).json;
    // Enough data that the backup takes several steps.
    const batch = (from: number) => ({
      points: Array.from({ length: 2000 }, (_, i) => ({
        key: `k${i % 10}`,
        step: from + Math.floor(i / 10),
        value: Math.sin(from + i),
      })),
    });
    let step = 0;
    for (; step < 20_000; step += 200) {
      await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: batch(step) });
    }
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      while (writing) {
        const res = await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: batch(step) });
        assertEquals(res.status, 200);
        step += 200;
        writes++;
        await new Promise((r) => setTimeout(r, 0));
      }
    })();
    const backup = await h.call("POST", "/api/admin/backup");
    writing = false;
    await writer;
    assertEquals(backup.status, 201, backup.text);
    assertEquals(backup.json.integrity, "ok");
    assert(writes > 0, "ingest went on while the backup ran");
    // Private, and one self-contained file: no empty -wal/-shm beside it.
    const mode = async (path: string) => (await Deno.stat(path)).mode! & 0o777;
    assertEquals(await mode(backup.json.path), 0o600);
    assertEquals(await mode(h.ctx.backupDir), 0o700);
    assertEquals(
      [...Deno.readDirSync(h.ctx.backupDir)].map((e) => `${h.ctx.backupDir}/${e.name}`),
      [backup.json.path],
    );

    const copy = new DatabaseSync(backup.json.path, { readOnly: true });
    const points = Number(copy.prepare("SELECT COUNT(*) AS n FROM metric_points").get()!.n);
    const summed = Number(copy.prepare("SELECT SUM(points) AS n FROM metric_keys").get()!.n);
    copy.close();
    // Every batch is one transaction: the copy holds whole batches, and the summary table
    // agrees with the points it summarises.
    assertEquals(points % 2000, 0);
    assert(points >= 200_000, `${points}`);
    assertEquals(summed, points);
  });
});
