// What makes a checkpoint the one it is: its path *and* its content. A path says nothing about
// which run's weights it holds (a retry or a re-run in the same folder writes `ckpt-50.pt`
// again), so the watcher follows each path's identity and the server compares fingerprints.
//
// - The identity (`FileIdentity`) is what `stat` says: size, modification time and inode
//   (a folder: the sum of its files' sizes, the newest time, the folder's inode). Cheap enough
//   for every poll; any write changes it (a rewrite in place moves the mtime, a rename of a
//   new file over the old one changes the inode).
// - The fingerprint is a SHA-256 over the size and the first and last 64 KiB of each file (a
//   folder: over its files' relative paths and fingerprints). Read once, when a checkpoint is
//   reported, and only from files inside the watched folder (`agent/open_inside.ts`). The end of a zip is its central directory, which holds every entry's CRC-32, so
//   for torch and Keras files it changes with any weight; for others it tells apart two files
//   of the same size and time that differ in their first or last bytes.

import { join } from "node:path";
import type { FoundCheckpoint } from "./scan_checkpoints.ts";
import { openInside } from "../open_inside.ts";

/** What `stat` says about a checkpoint; a changed one is a new write. */
export interface FileIdentity {
  size: number;
  mtime_ms: number;
  ino: number | null;
}

/** The bytes read from each end of a file for its fingerprint. */
const FINGERPRINT_SPAN = 64 * 1024;

/** The identity of a checkpoint the scanner found. */
export function identityOf(c: FoundCheckpoint): FileIdentity {
  return { size: c.size_bytes, mtime_ms: c.mtime_ms, ino: c.ino };
}

/** Whether two identities are the same file, unchanged (an unknown inode matches any). */
export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.size === b.size && a.mtime_ms === b.mtime_ms &&
    (a.ino === null || b.ino === null || a.ino === b.ino);
}

/**
 * The content fingerprint of a checkpoint (hex SHA-256) under the folder `root`: `null` inside
 * when it was not read (a link out of `root`), null when it vanished meanwhile. A TensorFlow
 * checkpoint's is its index's, which names every shard's checksum.
 */
export async function fingerprintOf(
  c: FoundCheckpoint,
  root: string,
): Promise<{ fingerprint: string | null } | null> {
  const one = async (path: string) => {
    const input = await fileDigestInput(path, root);
    return input === null || input === "outside" ? input : { fingerprint: await hex(input) };
  };
  const result = async () => {
    if (c.kind === "file") return await one(c.path);
    if (c.kind === "tf") return await one(`${c.path}.index`);
    const parts: Uint8Array[] = [];
    for (const rel of await filesBelow(c.path, 8)) {
      const inner = await fileDigestInput(join(c.path, rel), root);
      if (inner === null) return null;
      if (inner === "outside") continue;
      parts.push(new TextEncoder().encode(`${rel}\0`), await sha256(inner));
    }
    return { fingerprint: await hex(concat(parts)) };
  };
  const r = await result();
  return r === "outside" ? { fingerprint: null } : r;
}

async function fileDigestInput(path: string, root: string): Promise<Uint8Array | "outside" | null> {
  const opened = await openInside(path, root);
  if (opened === "gone") return null;
  if (opened === "outside") return "outside";
  const { file, size } = opened;
  try {
    const head = await readAt(file, 0, Math.min(size, FINGERPRINT_SPAN));
    const tailStart = Math.max(head.length, size - FINGERPRINT_SPAN);
    const tail = await readAt(file, tailStart, size - tailStart);
    return concat([new TextEncoder().encode(`${size}\0`), head, tail]);
  } finally {
    file.close();
  }
}

async function readAt(file: Deno.FsFile, offset: number, length: number): Promise<Uint8Array> {
  const buf = new Uint8Array(length);
  await file.seek(offset, Deno.SeekMode.Start);
  let got = 0;
  while (got < length) {
    const n = await file.read(buf.subarray(got));
    if (n === null) break;
    got += n;
  }
  return buf.subarray(0, got);
}

/** Every file below `dir` (relative paths, sorted), `depthLeft` folder levels down. */
export async function filesBelow(dir: string, depthLeft: number, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  try {
    for await (const e of Deno.readDir(dir)) {
      const rel = prefix ? `${prefix}/${e.name}` : e.name;
      if (e.isFile) out.push(rel);
      else if (e.isDirectory && depthLeft > 0) {
        out.push(...await filesBelow(join(dir, e.name), depthLeft - 1, rel));
      }
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  return out.sort();
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) (out.set(p, at), at += p.length);
  return out;
}

async function sha256(bytes: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>));
}

async function hex(bytes: Uint8Array): Promise<string> {
  return [...await sha256(bytes)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
