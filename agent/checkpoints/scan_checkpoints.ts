// One walk over a checkpoint directory: every checkpoint in it, with its size and the time it
// last changed. The watcher calls it on every poll; `import-run` calls it once.

import { join, resolve } from "node:path";
import {
  type CheckpointName,
  classifyEntry,
  HF_FOLDER,
  tfDataPrefix,
} from "./parse_checkpoint_name.ts";

/** A checkpoint found on disk: a file, a folder, or a TensorFlow index with its data shards. */
export interface FoundCheckpoint {
  /** Absolute; for TensorFlow the prefix without suffix (`/out/model.ckpt-5`). */
  path: string;
  /** A single file, a folder (`hf_folder`: a Hugging Face `checkpoint-N/`), or a TensorFlow index with its shards. */
  kind: "file" | "folder" | "hf_folder" | "tf";
  /** The inode of the file (of the folder; of a TensorFlow index); null where unknown. */
  ino: number | null;
  step: number | null;
  epoch: number | null;
  /** All of its bytes: a folder's files, or a TensorFlow index plus its shards. */
  size_bytes: number;
  /** The newest modification time among its files (a folder's own too), Unix ms. */
  mtime_ms: number;
}

/** How many folder levels below the scanned directory are searched. */
export const DEFAULT_SCAN_DEPTH = 4;
/** How deep the files of one checkpoint folder are counted (DeepSpeed nests folders). */
const FOLDER_CONTENT_DEPTH = 8;

/** Options of `scanCheckpoints`. */
export interface ScanOptions {
  /** Folder levels below `dir` to search. @default 4 */
  maxDepth?: number;
}

/**
 * Every checkpoint under `dir` (a missing `dir` has none), sorted by step with unknown steps
 * last, then by path. Empty files and empty folders are left out: nothing was written yet.
 */
export async function scanCheckpoints(
  dir: string,
  options: ScanOptions = {},
): Promise<FoundCheckpoint[]> {
  const found: FoundCheckpoint[] = [];
  await scanFolder(resolve(dir), options.maxDepth ?? DEFAULT_SCAN_DEPTH, found);
  return found.sort(compareCheckpoints);
}

/** Step ascending with null steps last, then path: the order `scanCheckpoints` returns. */
export function compareCheckpoints(a: FoundCheckpoint, b: FoundCheckpoint): number {
  if (a.step !== b.step) {
    if (a.step === null) return 1;
    if (b.step === null) return -1;
    return a.step - b.step;
  }
  return a.path < b.path ? -1 : a.path > b.path ? 1 : 0;
}

interface Entry {
  name: string;
  path: string;
  isDirectory: boolean;
  size: number;
  mtimeMs: number;
  ino: number | null;
}

interface Totals {
  size: number;
  mtimeMs: number;
}

async function scanFolder(dir: string, depthLeft: number, out: FoundCheckpoint[]): Promise<void> {
  const entries = await listEntries(dir);
  const dataPrefixes = new Set(entries.map((e) => tfDataPrefix(e.name)).filter((p) => p !== null));
  const tfIndexes: { prefix: string; name: CheckpointName; totals: Totals; ino: number | null }[] =
    [];
  const tfParts = new Map<string, Totals>();
  const subfolders: string[] = [];
  for (const entry of entries) {
    const indexPrefix = entry.name.endsWith(".index") ? entry.name.slice(0, -6) : null;
    const kind = classifyEntry(entry.name, entry.isDirectory, {
      tfIndexNeedsStep: indexPrefix === null || !dataPrefixes.has(indexPrefix),
    });
    switch (kind.kind) {
      case "file":
        if (entry.size > 0) out.push(found(entry.path, "file", entry.ino, kind.name, entry));
        break;
      case "folder": {
        const totals = await folderTotals(entry.path, entry.mtimeMs, FOLDER_CONTENT_DEPTH);
        const folderKind = HF_FOLDER.test(entry.name) ? "hf_folder" : "folder";
        if (totals.size > 0) out.push(found(entry.path, folderKind, entry.ino, kind.name, totals));
        break;
      }
      case "tf_index":
        tfIndexes.push({
          prefix: kind.prefix,
          name: kind.name,
          totals: totalsOf(entry),
          ino: entry.ino,
        });
        break;
      case "tf_part":
        tfParts.set(kind.prefix, addTotals(tfParts.get(kind.prefix), totalsOf(entry)));
        break;
      case "other":
        if (entry.isDirectory) subfolders.push(entry.path);
        break;
      case "ignored":
        break;
    }
  }
  // TensorFlow writes the data shards first and the index last, so an index means the
  // checkpoint is there; shards without an index are one still being written.
  for (const { prefix, name, totals, ino } of tfIndexes) {
    const all = addTotals(tfParts.get(prefix), totals);
    if (all.size > 0) out.push(found(join(dir, prefix), "tf", ino, name, all));
  }
  if (depthLeft <= 0) return;
  for (const sub of subfolders) await scanFolder(sub, depthLeft - 1, out);
}

function found(
  path: string,
  kind: FoundCheckpoint["kind"],
  ino: number | null,
  name: CheckpointName,
  totals: Totals,
): FoundCheckpoint {
  return {
    path,
    kind,
    ino,
    step: name.step,
    epoch: name.epoch,
    size_bytes: totals.size,
    mtime_ms: totals.mtimeMs,
  };
}

function totalsOf(entry: Entry): Totals {
  return { size: entry.size, mtimeMs: entry.mtimeMs };
}

function addTotals(a: Totals | undefined, b: Totals): Totals {
  return a ? { size: a.size + b.size, mtimeMs: Math.max(a.mtimeMs, b.mtimeMs) } : b;
}

// A folder checkpoint's size is that of all files below it; its time is the newest of theirs
// and of the folders themselves (a file added or removed changes its folder's time).
async function folderTotals(dir: string, ownMtimeMs: number, depthLeft: number): Promise<Totals> {
  let totals: Totals = { size: 0, mtimeMs: ownMtimeMs };
  for (const entry of await listEntries(dir)) {
    totals = addTotals(
      totals,
      entry.isDirectory && depthLeft > 0
        ? await folderTotals(entry.path, entry.mtimeMs, depthLeft - 1)
        : totalsOf(entry),
    );
  }
  return totals;
}

// The entries of `dir` with their sizes and times; [] when it is missing or unreadable (it may
// appear later, or vanish between two polls). Symbolic links to files count as the file
// (Lightning's `last.ckpt` may be one); links to folders are not followed, so no loop.
async function listEntries(dir: string): Promise<Entry[]> {
  const names: Deno.DirEntry[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) names.push(entry);
  } catch (err) {
    if (isGone(err)) return [];
    throw err;
  }
  const entries = await Promise.all(names.map(async (e): Promise<Entry | null> => {
    const path = join(dir, e.name);
    try {
      const info = e.isSymlink ? await Deno.stat(path) : await Deno.lstat(path);
      if (e.isSymlink && !info.isFile) return null;
      if (!info.isFile && !info.isDirectory) return null;
      return {
        name: e.name,
        path,
        isDirectory: info.isDirectory,
        size: info.isFile ? info.size : 0,
        mtimeMs: info.mtime?.getTime() ?? 0,
        ino: info.ino ?? null,
      };
    } catch (err) {
      if (isGone(err)) return null;
      throw err;
    }
  }));
  return entries.filter((e) => e !== null);
}

function isGone(err: unknown): boolean {
  return err instanceof Deno.errors.NotFound || err instanceof Deno.errors.PermissionDenied ||
    err instanceof Deno.errors.NotADirectory;
}
