// The watcher with real checkpoints in a reused folder: a retry or a re-run writing the same
// names again, files a framework deletes, a save cut short.
import { join } from "node:path";
import { assert, assertEquals } from "../../tests/assert.ts";
import { CheckpointWatcher, checkpointWire, type WatchedCheckpoint } from "./checkpoint_watcher.ts";
import { fixtureBytes, tempDir } from "./_test_files.ts";

function fakeClock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

const brief = (dir: string, found: WatchedCheckpoint[]) =>
  found.map((c) => `${c.path.slice(dir.length + 1)} ${c.state}`);

/** Writes a real torch.save zip at `name`; `variant` makes its weights (and bytes) differ. */
async function saveTorch(dir: string, name: string, variant: number): Promise<string> {
  const bytes = await fixtureBytes("torch_dict.pt");
  // The last tensor byte before the directory: other weights, same size, another CRC.
  const copy = bytes.slice();
  copy[1300] = (copy[1300] + variant) % 256;
  const path = join(dir, name);
  await Deno.writeFile(path, copy);
  return path;
}

/** Polls until the clock has passed the debounce twice: what settled in between. */
async function settle(watcher: CheckpointWatcher, clock: ReturnType<typeof fakeClock>) {
  const first = await watcher.poll();
  clock.advance(2000);
  return [...first, ...await watcher.poll()];
}

Deno.test("a retry that writes the same names again has them all; what it leaves alone is not its", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    // Attempt 1 wrote 50, 100, 150 and was killed.
    for (const step of [50, 100, 150]) await saveTorch(dir, `ckpt-${step}.pt`, 1);
    await Deno.writeFile(join(dir, "ckpt-10.pt"), await fixtureBytes("torch_dict.pt"));
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, {
      now: clock.now,
      state: await CheckpointWatcher.baselineState(dir),
    });
    assertEquals(await settle(watcher, clock), []); // the baseline is not this attempt's
    // Attempt 2 starts over: 50..200, a second later than attempt 1's files.
    clock.advance(1000);
    const written: string[] = [];
    for (const step of [50, 100, 150, 200]) {
      const path = await saveTorch(dir, `ckpt-${step}.pt`, 2);
      await Deno.utime(path, clock.now() / 1000, clock.now() / 1000);
      written.push(path);
    }
    const found = await settle(watcher, clock);
    assertEquals(brief(dir, found), [
      "ckpt-50.pt valid",
      "ckpt-100.pt valid",
      "ckpt-150.pt valid",
      "ckpt-200.pt valid",
    ]);
    assertEquals(found.map((c) => c.step), [50, 100, 150, 200]);
    assert(found.every((c) => /^[0-9a-f]{64}$/.test(c.fingerprint ?? "")));
    // ckpt-10.pt, never written again, stays attempt 1's.
    assertEquals(await settle(watcher, clock), []);
  } finally {
    await cleanup();
  }
});

Deno.test("the fingerprint tells two saves of the same size apart", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, { now: clock.now });
    const path = await saveTorch(dir, "ckpt-50.pt", 1);
    const [first] = await settle(watcher, clock);
    await saveTorch(dir, "ckpt-50.pt", 2);
    await Deno.utime(path, 2_000_000, 2_000_000);
    const [second] = await settle(watcher, clock);
    assertEquals([first.size_bytes, second.size_bytes], [first.size_bytes, first.size_bytes]);
    assert(first.fingerprint !== second.fingerprint, "same fingerprint for other weights");
  } finally {
    await cleanup();
  }
});

Deno.test("a checkpoint the framework deletes, and one from before the attempt, are reported gone", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const before = await saveTorch(dir, "epoch=0-step=7.ckpt", 1);
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, {
      now: clock.now,
      state: await CheckpointWatcher.baselineState(dir),
    });
    const kept = await saveTorch(dir, "epoch=1-step=14.ckpt", 2);
    const dropped = await saveTorch(dir, "epoch=2-step=21.ckpt", 3);
    assertEquals((await settle(watcher, clock)).length, 2);
    const { size } = await Deno.stat(dropped);
    await Deno.remove(dropped);
    await Deno.remove(before);
    const gone = await watcher.poll();
    assertEquals(brief(dir, gone), ["epoch=2-step=21.ckpt gone", "epoch=0-step=7.ckpt gone"]);
    assertEquals(checkpointWire(gone[0]), {
      path: dropped,
      size_bytes: size,
      mtime: gone[0].mtime_ms / 1000,
      state: "gone",
    });
    assertEquals(await settle(watcher, clock), []); // once
    assertEquals(Object.keys(watcher.state().reported), [kept]);
  } finally {
    await cleanup();
  }
});

Deno.test("a torch.save cut short is never reported while the job runs, and incomplete at its end", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, { now: clock.now });
    const good = await fixtureBytes("torch_dict.pt");
    await Deno.writeFile(join(dir, "ckpt-100.pt"), good);
    await Deno.writeFile(join(dir, "ckpt-200.pt"), good.subarray(0, 1024)); // the disk filled
    assertEquals(brief(dir, await settle(watcher, clock)), ["ckpt-100.pt valid"]);
    clock.advance(60_000);
    assertEquals(await watcher.poll(), []); // stable for a minute: still not a checkpoint
    const last = await watcher.poll({ final: true });
    assertEquals(brief(dir, last), ["ckpt-200.pt incomplete"]);
    assertEquals(
      checkpointWire(last[0]).problem,
      "no end-of-central-directory record at its end: the zip was cut short (its writer did not finish)",
    );
  } finally {
    await cleanup();
  }
});

Deno.test("Lightning's last.ckpt gets its step and epoch from its contents; Keras files count", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, { now: clock.now });
    for (
      const [from, to] of [
        ["lightning_last.ckpt", "last.ckpt"],
        ["model-03.keras", "model-03.keras"],
        ["model.weights.h5", "model.weights.h5"],
        ["model.h5", "model-02.h5"],
      ]
    ) await Deno.writeFile(join(dir, to), await fixtureBytes(from));
    const found = await settle(watcher, clock);
    assertEquals(
      found.map((c) => [c.path.slice(dir.length + 1), c.step, c.epoch, c.state]),
      [
        ["last.ckpt", 21, 2, "valid"],
        ["model-02.h5", null, 2, "valid"],
        ["model-03.keras", null, 3, "valid"],
        ["model.weights.h5", null, null, "valid"],
      ],
    );
  } finally {
    await cleanup();
  }
});

Deno.test("a watcher resumed from a version 1 state reports nothing it had, and later rewrites", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const path = await saveTorch(dir, "ckpt-5.pt", 1);
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, { now: clock.now, state: { registered: [path] } });
    assertEquals(await settle(watcher, clock), []);
    await saveTorch(dir, "ckpt-5.pt", 2);
    await Deno.utime(path, 3_000_000, 3_000_000);
    assertEquals(brief(dir, await settle(watcher, clock)), ["ckpt-5.pt valid"]);
  } finally {
    await cleanup();
  }
});

Deno.test("a link planted to a file outside the folder is never read; a link inside it is", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    // A secret the job cannot read, shaped so that reading it would quote it in a problem.
    const secret = join(dir, "agent-home", "secret");
    await Deno.mkdir(join(dir, "agent-home"));
    const header = new TextEncoder().encode('{"TOKEN-s3cr3t": {}}');
    const bytes = new Uint8Array(8 + header.length);
    new DataView(bytes.buffer).setUint32(0, header.length, true);
    bytes.set(header, 8);
    await Deno.writeFile(secret, bytes);
    const ckpt = join(dir, "ckpt");
    await Deno.mkdir(ckpt);
    await Deno.symlink(secret, join(ckpt, "w.safetensors"));
    await Deno.writeFile(
      join(ckpt, "epoch=2-step=21.ckpt"),
      await fixtureBytes("lightning_last.ckpt"),
    );
    await Deno.symlink(join(ckpt, "epoch=2-step=21.ckpt"), join(ckpt, "last.ckpt"));
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(ckpt, { now: clock.now });
    const all = [...await settle(watcher, clock), ...await watcher.poll({ final: true })];
    const wire = JSON.stringify(all.map(checkpointWire));
    assert(!wire.includes("TOKEN"), wire);
    const byName = new Map(all.map((c) => [c.path.slice(ckpt.length + 1), c]));
    assertEquals(byName.get("w.safetensors")?.fingerprint, null);
    assertEquals(byName.get("last.ckpt")?.step, 21); // read through the link inside
    assert(byName.get("last.ckpt")?.fingerprint, "the link inside is fingerprinted");
  } finally {
    await cleanup();
  }
});
