import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import type { ImportRequest, LogBatch } from "./client.ts";
import {
  importBatches,
  type ImportClient,
  importFolder,
  importKeyOf,
  type ImportSource,
  readImportSource,
} from "./import_folder.ts";
import { encodeRecord } from "../agent/tensorboard/mod.ts";
import { TFEVENTS_FIXTURES } from "./_test_server.ts";

/** An ImportClient that records what it was sent. */
function recordingClient() {
  const imports: ImportRequest[] = [];
  const batches: LogBatch[] = [];
  const client: ImportClient = {
    createImport(body) {
      imports.push(body);
      // deno-lint-ignore no-explicit-any -- only the run id matters to the import
      return Promise.resolve({ run: { id: "r-imported" } as any, created: imports.length === 1 });
    },
    logBatch(_runId, body) {
      batches.push(body);
      return Promise.resolve({ points: 0, checkpoints: body.checkpoints?.length ?? 0, logs: 0 });
    },
  };
  return { client, imports, batches };
}

function source(points: number, checkpoints: number): ImportSource {
  return {
    dir: "/exp",
    importKey: "dir:/exp",
    points: Array.from({ length: points }, (_, i) => ({ key: "loss", step: i, value: i })),
    keys: ["loss"],
    checkpoints: Array.from({ length: checkpoints }, (_, i) => ({
      path: `/exp/step_${i}.pt`,
      kind: "file" as const,
      ino: null,
      step: i,
      epoch: i % 2 ? null : i / 2,
      size_bytes: 10,
      mtime_ms: 0,
    })),
    skipped: 0,
    left_out: {},
    config: {},
  };
}

Deno.test("importBatches() sends at most 5000 points a batch, then the checkpoints", () => {
  const batches = importBatches(source(12_345, 1500));
  assertEquals(
    batches.map((b) => [b.points?.length ?? 0, b.checkpoints?.length ?? 0, b.epoch]),
    [[5000, 0, undefined], [5000, 0, undefined], [2345, 0, undefined], [0, 1000, undefined], [
      0,
      500,
      749,
    ]],
  );
  assertEquals(batches[3].checkpoints![1], {
    path: "/exp/step_1.pt",
    step: 1,
    size_bytes: 10,
    mtime: 0,
  });
  assertEquals(batches[3].checkpoints![2], {
    path: "/exp/step_2.pt",
    step: 2,
    epoch: 1,
    size_bytes: 10,
    mtime: 0,
  });
});

Deno.test("importFolder() reads the Keras run: 60 points under 6 keys and 10 checkpoints", async () => {
  const { client, imports, batches } = recordingClient();
  const dir = join(TFEVENTS_FIXTURES, "keras-exp0");
  const summary = await importFolder(client, await readImportSource(dir), {
    project: "p",
    experiment: "e",
  });
  assertEquals(imports, [{
    import_key: `dir:${await Deno.realPath(dir)}`,
    project: "p",
    experiment: "e",
    name: "keras-exp0",
  }]);
  assertEquals([summary.points, summary.keys.length, summary.checkpoints], [60, 6, 10]);
  assertEquals(batches.length, 2);
  const point = batches[0].points!.find((p) => p.key === "train/epoch_loss" && p.step === 0)!;
  assertEquals(point.wall_time, 1690483611.472537);
  assert(Math.abs((point.value as number) - 0.29735517501831055) < 1e-9);
  assertEquals(batches[1].checkpoints!.map((c) => c.step), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
});

Deno.test("importFolder() refuses a folder with nothing to import, before creating a run", async () => {
  const { client, imports } = recordingClient();
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(join(dir, "notes.txt"), "hello");
    await assertRejects(
      async () => await importFolder(client, await readImportSource(dir), { project: "p" }),
      "Nothing to import",
    );
    assertEquals(imports.length, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readImportSource() says when the folder does not exist", async () => {
  await assertRejects(
    () => readImportSource("/nonexistent/exp"),
    'Cannot import "/nonexistent/exp"',
  );
});

Deno.test("importKeyOf() keeps keys within 200 characters, distinct per folder", async () => {
  assertEquals(await importKeyOf("/home/me/exp"), "dir:/home/me/exp");
  const a = await importKeyOf("/data/" + "a".repeat(300) + "/run1");
  const b = await importKeyOf("/data/" + "b".repeat(300) + "/run1");
  assertEquals([a.length <= 200, b.length <= 200, a !== b, a.endsWith("/run1")], [
    true,
    true,
    true,
    true,
  ]);
});

// One TensorBoard Event with a simple_value scalar, encoded by hand (tags under 128 bytes).
function scalarEvent(tag: string, step: number, value: number, wallTime: number): Uint8Array {
  const bytes: number[] = [];
  const varint = (v: bigint) => {
    for (v = BigInt.asUintN(64, v); v >= 0x80n; v >>= 7n) bytes.push(Number(v & 0x7fn) | 0x80);
    bytes.push(Number(v));
  };
  const tagBytes = new TextEncoder().encode(tag);
  const valueMsg = [0x0a, tagBytes.length, ...tagBytes, 0x15, ...float32(value)];
  const summary = [0x0a, valueMsg.length, ...valueMsg];
  bytes.push(0x09, ...float64(wallTime), 0x10);
  varint(BigInt(step));
  bytes.push(0x2a, summary.length, ...summary);
  return encodeRecord(new Uint8Array(bytes));
}

function float32(v: number): number[] {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, v, true);
  return [...new Uint8Array(view.buffer)];
}

function float64(v: number): number[] {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, v, true);
  return [...new Uint8Array(view.buffer)];
}

Deno.test("readImportSource() sends NaN and ±Infinity as strings and leaves out negative steps", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const records = [
      scalarEvent("loss", 0, NaN, 100),
      scalarEvent("loss", 1, Infinity, 101),
      scalarEvent("loss", 2, -Infinity, 102),
      scalarEvent("loss", 3, 0.5, 103),
      scalarEvent("loss", -1, 0.5, 104),
    ];
    const file = new Uint8Array(records.reduce((n, r) => n + r.length, 0));
    records.reduce((offset, r) => (file.set(r, offset), offset + r.length), 0);
    await Deno.writeFile(join(dir, "events.out.tfevents.100.host"), file);
    const read = await readImportSource(dir);
    assertEquals(read.points, [
      { key: "loss", step: 0, value: "NaN", wall_time: 100 },
      { key: "loss", step: 1, value: "Infinity", wall_time: 101 },
      { key: "loss", step: 2, value: "-Infinity", wall_time: 102 },
      { key: "loss", step: 3, value: 0.5, wall_time: 103 },
    ]);
    assertEquals(read.skipped, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
