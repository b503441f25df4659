import { join } from "node:path";
import { assertEquals } from "../../tests/assert.ts";
import { CheckpointWatcher } from "./checkpoint_watcher.ts";
import {
  appendBytes,
  copyFolder,
  fixtureBytes,
  KERAS_TRAIN,
  tempDir,
  writeFile,
} from "./_test_files.ts";

/** A clock the test moves by hand. */
function fakeClock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

function names(dir: string, found: { path: string }[]): string[] {
  return found.map((c) => c.path.slice(dir.length + 1));
}

Deno.test("CheckpointWatcher reports a file being written in pieces only once it is stable", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, { debounceMs: 2000, now: clock.now });
    const path = await writeFile(dir, "model_step100.pt", 1000);
    assertEquals(await watcher.poll(), []); // first sight
    clock.advance(1500);
    await appendBytes(path, 1000);
    assertEquals(await watcher.poll(), []); // grew: the wait starts again
    clock.advance(1500);
    await appendBytes(path, 1000);
    assertEquals(await watcher.poll(), []);
    clock.advance(1999);
    assertEquals(await watcher.poll(), []); // unchanged, but not for 2 s yet
    clock.advance(1);
    const found = await watcher.poll();
    assertEquals(found.map((c) => [c.path, c.step, c.size_bytes]), [[path, 100, 3000]]);
    clock.advance(5000);
    assertEquals(await watcher.poll(), []); // reported once
    await appendBytes(path, 10);
    clock.advance(5000);
    assertEquals(await watcher.poll(), []);
    clock.advance(5000);
    // Written again: a new checkpoint at the same path, once stable.
    assertEquals((await watcher.poll()).map((c) => [c.path, c.size_bytes]), [[path, 3010]]);
  } finally {
    await cleanup();
  }
});

Deno.test("CheckpointWatcher reports a Hugging Face folder as one checkpoint once trainer_state.json is in", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, { now: clock.now });
    const weights = await fixtureBytes("model.safetensors");
    const optimizer = await fixtureBytes("torch_state_dict.pt");
    await Deno.mkdir(join(dir, "checkpoint-500"));
    await Deno.writeFile(join(dir, "checkpoint-500/model.safetensors"), weights);
    assertEquals(await watcher.poll(), []);
    clock.advance(1000);
    await Deno.writeFile(join(dir, "checkpoint-500/optimizer.pt"), optimizer);
    assertEquals(await watcher.poll(), []); // a new file inside: the folder changed
    clock.advance(2000);
    assertEquals(await watcher.poll(), []); // stable, but no trainer_state.json yet
    clock.advance(2000);
    await Deno.writeTextFile(
      join(dir, "checkpoint-500/trainer_state.json"),
      '{"global_step": 500}',
    );
    assertEquals(await watcher.poll(), []);
    clock.advance(2000);
    const found = await watcher.poll();
    const size = weights.length + optimizer.length + 20;
    assertEquals(found.map((c) => [c.step, c.size_bytes, c.state]), [[500, size, "valid"]]);
    assertEquals(names(dir, found), ["checkpoint-500"]);
    clock.advance(2000);
    assertEquals(await watcher.poll(), []);
  } finally {
    await cleanup();
  }
});

Deno.test("CheckpointWatcher reports a TensorFlow index with its data shard as one checkpoint", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, { now: clock.now });
    // TensorFlow writes the shard first, the index last.
    await writeFile(dir, "model.ckpt-20.data-00000-of-00001", 5000);
    assertEquals(await watcher.poll(), []);
    clock.advance(3000);
    assertEquals(await watcher.poll(), []); // no index: not a checkpoint yet
    await writeFile(dir, "model.ckpt-20.index", 100);
    assertEquals(await watcher.poll(), []);
    clock.advance(2000);
    const found = await watcher.poll();
    assertEquals(found.map((c) => [c.path, c.step, c.size_bytes]), [
      [join(dir, "model.ckpt-20"), 20, 5100],
    ]);
  } finally {
    await cleanup();
  }
});

Deno.test("CheckpointWatcher reports the Keras fixture's 10 checkpoints, steps 0..9, in order", async () => {
  const clock = fakeClock();
  const watcher = new CheckpointWatcher(KERAS_TRAIN, { now: clock.now });
  assertEquals(await watcher.poll(), []);
  clock.advance(2000);
  const found = await watcher.poll();
  assertEquals(found.map((c) => c.step), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assertEquals(names(KERAS_TRAIN, found)[0], "keras_embedding.ckpt-0");
});

Deno.test("CheckpointWatcher restarted with its state reports only what is new", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await copyFolder(KERAS_TRAIN, dir);
    const clock = fakeClock();
    const first = new CheckpointWatcher(dir, { now: clock.now });
    await first.poll();
    clock.advance(2000);
    assertEquals((await first.poll()).length, 10);
    const saved = JSON.parse(JSON.stringify(first.state()));
    assertEquals(Object.keys(saved.reported).length, 10);

    await writeFile(dir, "keras_embedding.ckpt-10.index", 967);
    const second = new CheckpointWatcher(dir, { now: clock.now, state: saved });
    assertEquals(await second.poll(), []);
    clock.advance(2000);
    const found = await second.poll();
    assertEquals(found.map((c) => c.step), [10]);
    assertEquals(Object.keys(second.state().reported).length, 11);
  } finally {
    await cleanup();
  }
});

Deno.test("CheckpointWatcher of a folder that does not exist yet waits for it", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const clock = fakeClock();
    const ckpts = join(dir, "later", "ckpts");
    const watcher = new CheckpointWatcher(ckpts, { now: clock.now });
    assertEquals(await watcher.poll(), []);
    clock.advance(5000);
    assertEquals(await watcher.poll(), []);
    await writeFile(ckpts, "epoch=0-step=10.ckpt", 10);
    assertEquals(await watcher.poll(), []);
    clock.advance(2000);
    assertEquals((await watcher.poll()).map((c) => [c.step, c.epoch]), [[10, 0]]);
  } finally {
    await cleanup();
  }
});

Deno.test("CheckpointWatcher forgets a file that vanished before it settled", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const clock = fakeClock();
    const watcher = new CheckpointWatcher(dir, { now: clock.now });
    const path = await writeFile(dir, "step_1.pt", 10);
    await watcher.poll();
    assertEquals(watcher.pendingCount, 1);
    await Deno.remove(path);
    clock.advance(2000);
    assertEquals(await watcher.poll(), []);
    assertEquals(watcher.pendingCount, 0);
  } finally {
    await cleanup();
  }
});
