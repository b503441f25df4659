import { join } from "node:path";
import { assert, assertEquals } from "../../tests/assert.ts";
import { scanCheckpoints } from "./scan_checkpoints.ts";
import { copyFolder, KERAS_TRAIN, tempDir, writeFile } from "./_test_files.ts";

/** The scan as `[relative path, step, epoch, size]` rows, for readable comparisons. */
async function rows(dir: string, options = {}) {
  return (await scanCheckpoints(dir, options)).map((c) => [
    c.path.slice(dir.length + 1),
    c.step,
    c.epoch,
    c.size_bytes,
  ]);
}

Deno.test("scanCheckpoints() finds the Keras fixture's 10 TensorFlow checkpoints, steps 0..9", async () => {
  const found = await scanCheckpoints(KERAS_TRAIN);
  assertEquals(found.map((c) => c.step), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assertEquals(found[3].path, join(KERAS_TRAIN, "keras_embedding.ckpt-3"));
  assertEquals(found[3].epoch, null);
  assertEquals(found[3].size_bytes, 967);
  assert(found[3].mtime_ms > 0);
});

Deno.test("scanCheckpoints() counts a TensorFlow index and its data shards as one checkpoint", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await copyFolder(KERAS_TRAIN, dir);
    await writeFile(dir, "keras_embedding.ckpt-9.data-00000-of-00002", 1000);
    await writeFile(dir, "keras_embedding.ckpt-9.data-00001-of-00002", 500);
    // Shards of a checkpoint whose index is not written yet: not a checkpoint yet.
    await writeFile(dir, "keras_embedding.ckpt-10.data-00000-of-00001", 100);
    const found = await rows(dir);
    assertEquals(found.length, 10);
    assertEquals(found[9], ["keras_embedding.ckpt-9", 9, null, 967 + 1000 + 500]);
    assertEquals(found[0], ["keras_embedding.ckpt-0", 0, null, 967]);
  } finally {
    await cleanup();
  }
});

Deno.test("scanCheckpoints() takes an index with shards beside it even without ckpt-<n> in its name", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await writeFile(dir, "weights.index", 10);
    await writeFile(dir, "weights.data-00000-of-00001", 90);
    await writeFile(dir, "faiss.index", 50);
    assertEquals(await rows(dir), [["weights", null, null, 100]]);
  } finally {
    await cleanup();
  }
});

Deno.test("scanCheckpoints() counts a Hugging Face checkpoint folder once, with its total size", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await writeFile(dir, "out/checkpoint-500/model.safetensors", 300);
    await writeFile(dir, "out/checkpoint-500/optimizer.pt", 200);
    await writeFile(dir, "out/checkpoint-500/trainer_state.json", 10);
    await writeFile(dir, "out/checkpoint-500/global_step500/shard.pt", 40);
    await writeFile(dir, "out/checkpoint-1000/model.safetensors", 300);
    await writeFile(dir, "out/training_args.bin", 5);
    await writeFile(dir, "out/tmp-checkpoint-1500/model.safetensors", 300);
    assertEquals(await rows(dir), [
      ["out/checkpoint-500", 500, null, 550],
      ["out/checkpoint-1000", 1000, null, 300],
    ]);
  } finally {
    await cleanup();
  }
});

Deno.test("scanCheckpoints() reads steps and epochs from names and sorts unknown steps last", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await writeFile(dir, "lightning/epoch=1-step=200.ckpt", 20);
    await writeFile(dir, "lightning/epoch=0-step=100.ckpt", 10);
    await writeFile(dir, "lightning/last.ckpt", 20);
    await writeFile(dir, "model_step1000.pt", 1);
    await writeFile(dir, "epoch_3.pth", 3);
    await writeFile(dir, "b.safetensors", 4);
    await writeFile(dir, "notes.txt", 4);
    assertEquals(await rows(dir), [
      ["lightning/epoch=0-step=100.ckpt", 100, 0, 10],
      ["lightning/epoch=1-step=200.ckpt", 200, 1, 20],
      ["model_step1000.pt", 1000, null, 1],
      ["b.safetensors", null, null, 4],
      ["epoch_3.pth", null, 3, 3],
      ["lightning/last.ckpt", null, null, 20],
    ]);
  } finally {
    await cleanup();
  }
});

Deno.test("scanCheckpoints() skips temporary, hidden and empty files", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await writeFile(dir, "model.pt.tmp", 10);
    await writeFile(dir, "model.pt.part", 10);
    await writeFile(dir, ".model.pt", 10);
    await writeFile(dir, ".hidden/model.pt", 10);
    await writeFile(dir, "empty.pt", 0);
    await Deno.mkdir(join(dir, "checkpoint-5"));
    await writeFile(dir, "model.pt", 10);
    assertEquals(await rows(dir), [["model.pt", null, null, 10]]);
  } finally {
    await cleanup();
  }
});

Deno.test("scanCheckpoints() searches 4 folder levels down by default, no deeper", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    await writeFile(dir, "a/b/c/d/step_4.pt", 1);
    await writeFile(dir, "a/b/c/d/e/step_5.pt", 1);
    assertEquals(await rows(dir), [["a/b/c/d/step_4.pt", 4, null, 1]]);
    assertEquals((await rows(dir, { maxDepth: 5 })).length, 2);
  } finally {
    await cleanup();
  }
});

Deno.test("scanCheckpoints() follows links to files but not to folders", async () => {
  const { dir, cleanup } = await tempDir();
  try {
    const target = await writeFile(dir, "ckpts/epoch=0-step=10.ckpt", 10);
    await Deno.symlink(target, join(dir, "ckpts/last.ckpt"));
    await Deno.symlink(dir, join(dir, "ckpts/loop"));
    assertEquals(await rows(dir), [
      ["ckpts/epoch=0-step=10.ckpt", 10, 0, 10],
      ["ckpts/last.ckpt", null, null, 10],
    ]);
  } finally {
    await cleanup();
  }
});

Deno.test("scanCheckpoints() of a missing folder is empty", async () => {
  assertEquals(await scanCheckpoints("/nonexistent/gpuctl/ckpts"), []);
});
