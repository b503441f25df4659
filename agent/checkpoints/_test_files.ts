// Helpers for the checkpoint tests: real temporary files and the shared fixtures.

import { dirname, join } from "node:path";
import { tfeventsPath } from "../../tests/fixtures/mod.ts";

/** The Keras run's train folder: TF checkpoint indexes `keras_embedding.ckpt-0..9`, no shards. */
export const KERAS_TRAIN = tfeventsPath("keras-exp0/train");

/** The bytes of a checkpoint the frameworks wrote (`testdata/`, see its README). */
export function fixtureBytes(name: string): Promise<Uint8Array> {
  return Deno.readFile(new URL(`./testdata/${name}`, import.meta.url));
}

/** Writes `bytes` bytes at `path` under `root`, creating folders; returns the absolute path. */
export async function writeFile(root: string, path: string, bytes: number): Promise<string> {
  const full = join(root, path);
  await Deno.mkdir(dirname(full), { recursive: true });
  await Deno.writeFile(full, new Uint8Array(bytes).fill(7));
  return full;
}

/** Appends `bytes` bytes to `path`, as a writer in progress does. */
export async function appendBytes(path: string, bytes: number): Promise<void> {
  await Deno.writeFile(path, new Uint8Array(bytes).fill(1), { append: true });
}

/** Copies the files of `from` (one level) into `to`, made writable. */
export async function copyFolder(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isFile) {
      await Deno.writeFile(join(to, e.name), await Deno.readFile(join(from, e.name)));
    }
  }
}

/** A fresh temporary folder, removed by the returned `cleanup`. */
export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "gpuctl-ckpt-test-" }));
  return { dir, cleanup: () => Deno.remove(dir, { recursive: true }) };
}
