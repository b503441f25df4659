import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { eventFileBytes, fileVersionEvent, ProtoWriter, summaryEvent } from "./_event_writer.ts";
import {
  closeTo,
  expectedScalars,
  fixturePath,
  KERAS_TRAIN,
  KERAS_VALIDATION,
  TORCH_NEWER,
  TORCH_OLDER,
} from "./_fixtures.ts";
import type { ScalarPoint } from "./event_decoder.ts";
import { RECORD_OVERHEAD } from "./record_reader.ts";
import { listEventFiles } from "./event_file.ts";
import { mergeScalars } from "./read_event_dir.ts";
import { type TailerState, TensorBoardTailer } from "./tailer.ts";

const name = (relPath: string) => relPath.split("/").pop()!;

async function withTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "tb_tailer_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function append(path: string, bytes: Uint8Array): Promise<void> {
  await Deno.writeFile(path, bytes, { append: true });
}

/** Deterministic cut points: `n` distinct offsets in (0, length), ascending. */
function cuts(length: number, n: number, seed: number): number[] {
  let x = seed;
  const out = new Set<number>();
  while (out.size < n) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    out.add(1 + (x % (length - 1)));
  }
  return [...out].sort((a, b) => a - b);
}

function pieces(bytes: Uint8Array, at: number[]): Uint8Array[] {
  const bounds = [0, ...at, bytes.length];
  return bounds.slice(1).map((end, i) => bytes.subarray(bounds[i], end));
}

/** Record boundaries of a file, to cut inside a header or exactly between records. */
function recordStarts(bytes: Uint8Array): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const starts: number[] = [];
  for (let at = 0; at < bytes.length; at += view.getUint32(at, true) + RECORD_OVERHEAD) {
    starts.push(at);
  }
  return starts;
}

async function expectedRun(run: string): Promise<ScalarPoint[]> {
  const files = (await expectedScalars()).filter((e) => e.file.startsWith(`${run}/`));
  // expected-scalars.jsonl lists files oldest first, so applying in order lets the newer win.
  return mergeScalars(files.map((e) => {
    const dir = e.file.slice(run.length + 1).split("/").slice(0, -1).join("/");
    return {
      tag: dir ? `${dir}/${e.tag}` : e.tag,
      step: e.step,
      value: e.value,
      wall_time: e.wall_time,
    };
  }));
}

function assertSamePoints(actual: ScalarPoint[], expected: ScalarPoint[], what: string): void {
  strictEqual(actual.length, expected.length, `${what}: point count`);
  expected.forEach((e, i) => {
    const a = actual[i];
    const where = `${what}: ${e.tag}@${e.step}`;
    strictEqual(a.tag, e.tag, where);
    strictEqual(a.step, e.step, where);
    ok(closeTo(a.value, e.value), `${where}: value ${a.value} != ${e.value}`);
    ok(closeTo(a.wall_time, e.wall_time), `${where}: wall_time ${a.wall_time} != ${e.wall_time}`);
  });
}

Deno.test("poll() merges each fixture run to 160 points: keras-exp0 prefixed by folder, torch-logs newest file winning", async () => {
  const keras = mergeScalars(await new TensorBoardTailer(fixturePath("keras-exp0")).poll());
  const torch = mergeScalars(await new TensorBoardTailer(fixturePath("torch-logs")).poll());
  assertSamePoints(keras, await expectedRun("keras-exp0"), "keras-exp0");
  assertSamePoints(torch, await expectedRun("torch-logs"), "torch-logs");
  strictEqual(keras.length, 60);
  deepStrictEqual(
    new Set(keras.map((p) => p.tag)),
    new Set([
      "train/epoch_loss",
      "train/epoch_accuracy",
      "validation/epoch_loss",
      "validation/epoch_accuracy",
      "validation/evaluation_loss_vs_iterations",
      "validation/evaluation_accuracy_vs_iterations",
    ]),
  );
  strictEqual(torch.length, 100);
  for (const p of torch) strictEqual(p.value, 2 * p.step, `y=x@${p.step}`);
  strictEqual(keras.length + torch.length, 160);
});

Deno.test("poll() of each file written in pieces cut mid-record emits exactly the full read, once", async () => {
  for (const [i, file] of [KERAS_TRAIN, KERAS_VALIDATION, TORCH_OLDER, TORCH_NEWER].entries()) {
    const bytes = await Deno.readFile(fixturePath(file));
    const starts = recordStarts(bytes);
    // Random cuts, one inside a header, one exactly on a record boundary.
    const at = [...new Set([...cuts(bytes.length, 8, i + 1), starts[2] + 5, starts[3]])]
      .sort((a, b) => a - b);
    let full: ScalarPoint[] = [];
    await withTempDir(async (dir) => {
      await Deno.writeFile(`${dir}/${name(file)}`, bytes);
      full = await new TensorBoardTailer(dir).poll();
    });
    await withTempDir(async (dir) => {
      const path = `${dir}/${name(file)}`;
      // A small chunk makes graph and image records span several reads.
      const tailer = new TensorBoardTailer(dir, { chunkBytes: 4096 });
      const emitted: ScalarPoint[] = [];
      for (const piece of pieces(bytes, at)) {
        await append(path, piece);
        emitted.push(...await tailer.poll());
      }
      emitted.push(...await tailer.poll());
      deepStrictEqual(emitted, full, file);
      ok(emitted.length >= 20, `${file}: ${emitted.length} points`);
      strictEqual(tailer.stats().badCrc, 0);
    });
  }
});

Deno.test("poll() of the keras run with both folders growing at once ends with the full read", async () => {
  await withTempDir(async (dir) => {
    const train = await Deno.readFile(fixturePath(KERAS_TRAIN));
    const validation = await Deno.readFile(fixturePath(KERAS_VALIDATION));
    await Deno.mkdir(`${dir}/train`);
    await Deno.mkdir(`${dir}/validation`);
    const trainPieces = pieces(train, cuts(train.length, 6, 11));
    const validationPieces = pieces(validation, cuts(validation.length, 6, 12));
    const tailer = new TensorBoardTailer(dir);
    const emitted: ScalarPoint[] = [];
    for (let i = 0; i < trainPieces.length; i++) {
      await append(`${dir}/validation/${name(KERAS_VALIDATION)}`, validationPieces[i]);
      emitted.push(...await tailer.poll());
      await append(`${dir}/train/${name(KERAS_TRAIN)}`, trainPieces[i]);
      emitted.push(...await tailer.poll());
    }
    strictEqual(emitted.length, 60);
    assertSamePoints(mergeScalars(emitted), await expectedRun("keras-exp0"), "keras-exp0");
    strictEqual(tailer.stats().superseded, 0);
  });
});

Deno.test("poll() keeps the newer torch file's values when the older file grows after it", async () => {
  await withTempDir(async (dir) => {
    const older = await Deno.readFile(fixturePath(TORCH_OLDER));
    const newer = await Deno.readFile(fixturePath(TORCH_NEWER));
    const olderPieces = pieces(older, cuts(older.length, 4, 21));
    const newerPieces = pieces(newer, cuts(newer.length, 4, 22));
    const tailer = new TensorBoardTailer(dir);
    const emitted: ScalarPoint[] = [];
    for (let i = 0; i < newerPieces.length; i++) {
      await append(`${dir}/${name(TORCH_NEWER)}`, newerPieces[i]);
      emitted.push(...await tailer.poll());
      await append(`${dir}/${name(TORCH_OLDER)}`, olderPieces[i]);
      emitted.push(...await tailer.poll());
    }
    const merged = mergeScalars(emitted);
    strictEqual(merged.length, 100);
    for (const p of merged) strictEqual(p.value, 2 * p.step, `y=x@${p.step}`);
    // Each of the newer file's points once; the older file's only where the newer had none yet.
    const fromNewer = emitted.filter((p) => p.value === 2 * p.step && p.step > 0);
    strictEqual(fromNewer.length, 99);
    strictEqual(new Set(fromNewer.map((p) => p.step)).size, 99);
    const fromOlder = emitted.filter((p) => p.value === p.step && p.step > 0);
    strictEqual(new Set(fromOlder.map((p) => p.step)).size, fromOlder.length);
    const stats = tailer.stats();
    ok(stats.superseded > 0, "some older points were superseded");
    strictEqual(stats.superseded + emitted.length, 200);
  });
});

Deno.test("poll() skips a record with a corrupted payload byte, counts it and decodes the rest", async () => {
  await withTempDir(async (dir) => {
    const bytes = new Uint8Array(await Deno.readFile(fixturePath(TORCH_OLDER)));
    const starts = recordStarts(bytes);
    bytes[starts[51] + 12 + 3] ^= 0x20; // record 51 holds step 50 (record 0 is file_version)
    await Deno.writeFile(`${dir}/${name(TORCH_OLDER)}`, bytes);
    const tailer = new TensorBoardTailer(dir);
    const points = await tailer.poll();
    strictEqual(points.length, 99);
    ok(!points.some((p) => p.step === 50));
    for (const p of points) strictEqual(p.value, p.step);
    strictEqual(tailer.stats().badCrc, 1);
    deepStrictEqual(await tailer.poll(), []);
    strictEqual(tailer.stats().badCrc, 1);
  });
});

Deno.test("poll() stops at lost framing, counts it once and starts over when the file is replaced", async () => {
  await withTempDir(async (dir) => {
    const original = await Deno.readFile(fixturePath(TORCH_OLDER));
    const bytes = new Uint8Array(original);
    const starts = recordStarts(bytes);
    bytes[starts[31] + 2] ^= 0x01;
    const path = `${dir}/${name(TORCH_OLDER)}`;
    await Deno.writeFile(path, bytes);
    const tailer = new TensorBoardTailer(dir);
    const points = await tailer.poll();
    deepStrictEqual(points.map((p) => p.step), Array.from({ length: 30 }, (_, i) => i));
    strictEqual(tailer.stats().framingLost, 1);
    strictEqual(tailer.state().files[name(TORCH_OLDER)].offset, starts[31]);
    strictEqual(tailer.state().files[name(TORCH_OLDER)].framingLost, true);
    await append(path, original.subarray(0, 100));
    deepStrictEqual(await tailer.poll(), []);
    strictEqual(tailer.stats().framingLost, 1);
    // A writer that recreates the file (new inode) is read from its start.
    await Deno.writeFile(`${dir}/replacement`, original);
    await Deno.rename(`${dir}/replacement`, path);
    strictEqual((await tailer.poll()).length, 100);
  });
});

Deno.test("poll() rereads a file from 0 when it shrinks below the saved offset", async () => {
  await withTempDir(async (dir) => {
    const older = await Deno.readFile(fixturePath(TORCH_OLDER));
    const path = `${dir}/${name(TORCH_OLDER)}`;
    await Deno.writeFile(path, older);
    const tailer = new TensorBoardTailer(dir);
    strictEqual((await tailer.poll()).length, 100);
    const starts = recordStarts(older);
    await Deno.truncate(path, starts[11]);
    deepStrictEqual(
      (await tailer.poll()).map((p) => p.step),
      Array.from({ length: 10 }, (_, i) => i),
    );
  });
});

Deno.test("a tailer built from state() re-emits nothing and reads only appended bytes", async () => {
  await withTempDir(async (dir) => {
    const files = [KERAS_TRAIN, KERAS_VALIDATION].map((f) => ({
      rel: f.slice("keras-exp0/".length),
      bytesPromise: Deno.readFile(fixturePath(f)),
    }));
    await Deno.mkdir(`${dir}/train`);
    await Deno.mkdir(`${dir}/validation`);
    const halves: Uint8Array[] = [];
    for (const [i, f] of files.entries()) {
      const bytes = await f.bytesPromise;
      const [head, tail] = pieces(bytes, [cuts(bytes.length, 1, 31 + i)[0]]);
      await Deno.writeFile(`${dir}/${f.rel}`, head);
      halves.push(tail);
    }
    const first = new TensorBoardTailer(dir);
    const before = await first.poll();
    const saved: TailerState = JSON.parse(JSON.stringify(first.state()));

    const second = new TensorBoardTailer(dir, { state: saved });
    deepStrictEqual(await second.poll(), []);
    for (const [i, f] of files.entries()) await append(`${dir}/${f.rel}`, halves[i]);
    const after = await second.poll();
    strictEqual(before.length + after.length, 60);
    assertSamePoints(
      mergeScalars([...before, ...after]),
      await expectedRun("keras-exp0"),
      "resumed",
    );
  });
});

Deno.test("a tailer built from state() still knows TF2 scalar tags whose metadata it read before", async () => {
  await withTempDir(async (dir) => {
    const scalar = (step: number, value: number, withMetadata: boolean) =>
      summaryEvent(step, 100 + step, [{
        tag: "epoch_loss",
        tensor: new ProtoWriter().varint(1, 1).bytes(2, new Uint8Array()).float(5, value),
        plugin: withMetadata ? "scalars" : undefined,
      }]);
    const path = `${dir}/events.out.tfevents.1700000000.host.1.0.v2`;
    await Deno.writeFile(path, eventFileBytes([fileVersionEvent(100), scalar(0, 0.5, true)]));
    const first = new TensorBoardTailer(dir);
    strictEqual((await first.poll()).length, 1);
    const second = new TensorBoardTailer(dir, { state: JSON.parse(JSON.stringify(first.state())) });
    await append(path, eventFileBytes([scalar(1, 0.25, false), scalar(2, 0.125, false)]));
    deepStrictEqual(await second.poll(), [
      { tag: "epoch_loss", step: 1, value: 0.25, wall_time: 101 },
      { tag: "epoch_loss", step: 2, value: 0.125, wall_time: 102 },
    ]);
  });
});

Deno.test("poll() of a root that does not exist yet returns nothing, then its points once it does", async () => {
  await withTempDir(async (dir) => {
    const root = `${dir}/not-yet`;
    const tailer = new TensorBoardTailer(root);
    deepStrictEqual(await tailer.poll(), []);
    await Deno.mkdir(root);
    await Deno.writeFile(
      `${root}/${name(TORCH_NEWER)}`,
      await Deno.readFile(fixturePath(TORCH_NEWER)),
    );
    strictEqual((await tailer.poll()).length, 100);
  });
});

Deno.test("poll() forgets deleted files and serialises overlapping calls", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/${name(TORCH_NEWER)}`;
    await Deno.writeFile(path, await Deno.readFile(fixturePath(TORCH_NEWER)));
    await Deno.writeFile(`${dir}/checkpoint`, new TextEncoder().encode("not an event file"));
    const tailer = new TensorBoardTailer(dir);
    const [a, b] = await Promise.all([tailer.poll(), tailer.poll()]);
    strictEqual(a.length + b.length, 100);
    deepStrictEqual(Object.keys(tailer.state().files), [name(TORCH_NEWER)]);
    await Deno.remove(path);
    deepStrictEqual(await tailer.poll(), []);
    deepStrictEqual(tailer.state().files, {});
  });
});

Deno.test("TensorBoardTailer rejects a chunk size that could not make progress", () => {
  throws(() => new TensorBoardTailer("/tmp", { chunkBytes: 0 }), RangeError);
  throws(() => new TensorBoardTailer("/tmp", { chunkBytes: 1.5 }), RangeError);
});

Deno.test("an event file a job links to a file outside the followed folder is never read", async () => {
  await withTempDir(async (dir) => {
    // What the agent (possibly root) can read and the job cannot: another run's private logs.
    await Deno.mkdir(`${dir}/private`);
    const secret = eventFileBytes([
      fileVersionEvent(1),
      summaryEvent(1, 2, [{ tag: "client_secret", simpleValue: 4242 }]),
    ]);
    await Deno.writeFile(`${dir}/private/events.out.tfevents.1.host`, secret, { mode: 0o600 });
    await Deno.mkdir(`${dir}/job/runs`, { recursive: true });
    await Deno.symlink(
      `${dir}/private/events.out.tfevents.1.host`,
      `${dir}/job/runs/events.out.tfevents.2.host`,
    );
    await Deno.writeFile(
      `${dir}/job/runs/events.out.tfevents.3.host`,
      eventFileBytes([fileVersionEvent(1), summaryEvent(5, 2, [{ tag: "loss", simpleValue: 1 }])]),
    );
    const tailer = new TensorBoardTailer(`${dir}/job`);
    const points = [...await tailer.poll(), ...await tailer.poll()];
    deepStrictEqual(points.map((p) => [p.tag, p.step]), [["runs/loss", 5]]);
  });
});

Deno.test("a file kept open between polls is let go once its path leads to a link out of the folder", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/private`);
    const secret = eventFileBytes([
      fileVersionEvent(1),
      summaryEvent(1, 2, [{ tag: "client_secret", simpleValue: 4242 }]),
      summaryEvent(1, 3, [{ tag: "client_secret", simpleValue: 4343 }]),
    ]);
    await Deno.writeFile(`${dir}/private/events.out.tfevents.1.host`, secret, { mode: 0o600 });
    await Deno.mkdir(`${dir}/job/runs`, { recursive: true });
    const path = `${dir}/job/runs/events.out.tfevents.2.host`;
    await Deno.writeFile(path, eventFileBytes([fileVersionEvent(1)]));
    const tailer = new TensorBoardTailer(`${dir}/job`);
    try {
      await append(path, eventFileBytes([summaryEvent(5, 2, [{ tag: "loss", simpleValue: 1 }])]));
      deepStrictEqual((await tailer.poll()).map((p) => [p.tag, p.step]), [["runs/loss", 5]]);
      // The job swaps its file for a link to a longer file it cannot read itself.
      await Deno.remove(path);
      await Deno.symlink(`${dir}/private/events.out.tfevents.1.host`, path);
      const later = [...await tailer.poll(), ...await tailer.poll()];
      deepStrictEqual(later, []);
    } finally {
      await tailer.close();
    }
  });
});

Deno.test("close() lets go of the open files, and a later poll reads on from where it was", async () => {
  await withTempDir(async (dir) => {
    const path = `${dir}/events.out.tfevents.1.host`;
    await Deno.writeFile(path, eventFileBytes([fileVersionEvent(1)]));
    const tailer = new TensorBoardTailer(dir);
    const loss = (step: number) =>
      eventFileBytes([summaryEvent(step, step, [{ tag: "loss", simpleValue: step }])]);
    await append(path, loss(1));
    deepStrictEqual((await tailer.poll()).map((p) => p.step), [1]);
    await append(path, loss(2));
    deepStrictEqual((await tailer.poll()).map((p) => p.step), [2]);
    await tailer.close();
    await append(path, loss(3));
    deepStrictEqual((await tailer.poll()).map((p) => p.step), [3]);
    await tailer.close();
  });
});

Deno.test("poll() lists the folders again only once one of them changed", async () => {
  await withTempDir(async (dir) => {
    await Deno.mkdir(`${dir}/train`);
    const first = `${dir}/train/events.out.tfevents.1.host`;
    await Deno.writeFile(first, eventFileBytes([fileVersionEvent(1)]));
    // Folders last changed an hour ago: their listing can serve again.
    const hourAgo = new Date(Date.now() - 3600_000);
    for (const folder of [dir, `${dir}/train`]) await Deno.utime(folder, hourAgo, hourAgo);
    let listings = 0;
    const tailer = new TensorBoardTailer(dir, {
      list: (root, folders) => {
        listings++;
        return listEventFiles(root, folders);
      },
    });
    const loss = (step: number) =>
      eventFileBytes([summaryEvent(step, step, [{ tag: "loss", simpleValue: step }])]);
    try {
      await append(first, loss(1));
      deepStrictEqual((await tailer.poll()).map((p) => [p.tag, p.step]), [["train/loss", 1]]);
      await append(first, loss(2));
      deepStrictEqual((await tailer.poll()).map((p) => [p.tag, p.step]), [["train/loss", 2]]);
      strictEqual(listings, 1, "a file growing changes no folder");
      // A new file changes its folder: listed again, and read in the same poll.
      await Deno.writeFile(
        `${dir}/train/events.out.tfevents.2.host`,
        eventFileBytes([fileVersionEvent(2), summaryEvent(3, 3, [{ tag: "acc", simpleValue: 1 }])]),
      );
      deepStrictEqual((await tailer.poll()).map((p) => [p.tag, p.step]), [["train/acc", 3]]);
      strictEqual(listings, 2);
      // A new folder under the root changes the root.
      await Deno.utime(dir, hourAgo, hourAgo);
      await Deno.utime(`${dir}/train`, hourAgo, hourAgo);
      await tailer.poll();
      const listed = listings;
      await Deno.mkdir(`${dir}/eval`);
      await Deno.writeFile(
        `${dir}/eval/events.out.tfevents.3.host`,
        eventFileBytes([fileVersionEvent(3), summaryEvent(4, 4, [{ tag: "f1", simpleValue: 1 }])]),
      );
      deepStrictEqual((await tailer.poll()).map((p) => [p.tag, p.step]), [["eval/f1", 4]]);
      strictEqual(listings, listed + 1);
    } finally {
      await tailer.close();
    }
  });
});

Deno.test("with folderCheckMs, files it knows are read at every poll and a new one once the folders are looked at (as the last poll after a job does)", async () => {
  await withTempDir(async (dir) => {
    const first = `${dir}/events.out.tfevents.1.host`;
    await Deno.writeFile(first, eventFileBytes([fileVersionEvent(1)]));
    const hourAgo = new Date(Date.now() - 3600_000);
    await Deno.utime(dir, hourAgo, hourAgo);
    const tailer = new TensorBoardTailer(dir, { localDevice: () => true, folderCheckMs: 600_000 });
    const point = (step: number, tag = "loss") =>
      eventFileBytes([summaryEvent(step, step, [{ tag, simpleValue: step }])]);
    const polled = async () => (await tailer.poll()).map((p) => [p.tag, p.step]);
    try {
      await append(first, point(1));
      deepStrictEqual(await polled(), [["loss", 1]]);
      await Deno.writeFile(
        `${dir}/events.out.tfevents.2.host`,
        eventFileBytes([fileVersionEvent(2), summaryEvent(9, 9, [{ tag: "acc", simpleValue: 1 }])]),
      );
      await append(first, point(2));
      deepStrictEqual(await polled(), [["loss", 2]], "the folder is not looked at yet");
      deepStrictEqual(await polled(), [], "nor at the poll after");
      tailer.lookAtFoldersNext();
      deepStrictEqual(await polled(), [["acc", 9]]);
    } finally {
      await tailer.close();
    }
  });
});

Deno.test("poll() lists every time with a list that names no folders", async () => {
  await withTempDir(async (dir) => {
    let listings = 0;
    const tailer = new TensorBoardTailer(dir, {
      list: (root) => {
        listings++;
        return listEventFiles(root);
      },
    });
    await tailer.poll();
    await tailer.poll();
    strictEqual(listings, 2);
  });
});

/**
 * An event file in `dir` (whose folder last changed an hour ago) and a tailer that keeps it open,
 * as on a local disk; `loss(step)` is one record's bytes.
 */
async function keptOpenRig(dir: string) {
  const path = `${dir}/events.out.tfevents.1.host`;
  await Deno.writeFile(path, eventFileBytes([fileVersionEvent(1)]));
  const hourAgo = new Date(Date.now() - 3600_000);
  await Deno.utime(dir, hourAgo, hourAgo);
  const tailer = new TensorBoardTailer(dir, { localDevice: () => true });
  const loss = (step: number) =>
    eventFileBytes([summaryEvent(step, step, [{ tag: "loss", simpleValue: step }])]);
  return { path, tailer, loss };
}

Deno.test("on a local disk, a file kept open is followed in place, and a file put in its place is read from its start", async () => {
  await withTempDir(async (dir) => {
    const { path, tailer, loss } = await keptOpenRig(dir);
    try {
      await append(path, loss(1));
      deepStrictEqual((await tailer.poll()).map((p) => p.step), [1]);
      await append(path, loss(2));
      await append(path, loss(3));
      deepStrictEqual((await tailer.poll()).map((p) => p.step), [2, 3]);
      // The job writes a new file and renames it over the old one.
      await Deno.writeFile(`${dir}/tmp`, eventFileBytes([fileVersionEvent(1)]));
      await append(`${dir}/tmp`, loss(7));
      await Deno.rename(`${dir}/tmp`, path);
      deepStrictEqual((await tailer.poll()).map((p) => p.step), [7]);
      await append(path, loss(8));
      deepStrictEqual((await tailer.poll()).map((p) => p.step), [8]);
    } finally {
      await tailer.close();
    }
  });
});

Deno.test("on a local disk, a file kept open that is cut back or written a record in pieces is read right", async () => {
  await withTempDir(async (dir) => {
    const { path, tailer, loss } = await keptOpenRig(dir);
    try {
      await append(path, loss(1));
      await append(path, loss(2));
      deepStrictEqual((await tailer.poll()).map((p) => p.step), [1, 2]);
      // A record still being written: nothing until its last byte is there, then it once.
      const third = loss(3);
      await append(path, third.subarray(0, 5));
      deepStrictEqual(await tailer.poll(), []);
      await append(path, third.subarray(5, third.length - 1));
      deepStrictEqual(await tailer.poll(), []);
      await append(path, third.subarray(third.length - 1));
      deepStrictEqual((await tailer.poll()).map((p) => p.step), [3]);
      // Cut back in place (the same file, its folder unchanged): read again from its start.
      await Deno.truncate(path, 0);
      await append(path, eventFileBytes([fileVersionEvent(1)]));
      await append(path, loss(9));
      deepStrictEqual((await tailer.poll()).map((p) => p.step), [9]);
    } finally {
      await tailer.close();
    }
  });
});
