// Whether a checkpoint on disk is complete, read from its own bytes, so that a file cut short
// (a full disk inside `torch.save`, a killed writer) is never taken for a checkpoint.
//
// Each format says where it ends:
// - a zip (PyTorch's `torch.save` since 1.6, Lightning's `.ckpt`, Keras's `.keras`) ends with
//   its central directory and the end-of-central-directory record that points at it; both are
//   written last, so a cut file has neither, or one that points past its end;
// - safetensors starts with the length of its JSON header, and the header gives every
//   tensor's byte range: the file is exactly 8 + header + the last range's end long;
// - HDF5 (`.h5`, `.weights.h5`) has a superblock with the end-of-file address, which the
//   library writes when it closes the file (and then truncates the file to it);
// - a Hugging Face `checkpoint-N/` folder is complete once `trainer_state.json` (written after
//   the weights and the optimizer) parses, and every file in it of a format above is complete.
// Bytes of no format above (a pickle, a file that starts with something else) cannot be
// checked: they count as complete once stable, as before.
//
// A torch zip's pickled dict also tells the step and epoch of a Lightning `last.ckpt`: its
// first keys are `epoch` and `global_step` (read by `readTopLevelInts`).

import { join } from "node:path";
import { filesBelow } from "./identity.ts";
import { openInside } from "../open_inside.ts";

/** What the bytes of a checkpoint say. */
export interface Completeness {
  /**
   * The format recognised: `torch-zip` (or `zip`, one without `data.pkl`), `keras`,
   * `safetensors`, `hdf5`, `hf-folder`, `folder`; null when none.
   */
  format: string | null;
  /** Why it is not complete; null when it is (or when nothing can be checked). */
  problem: string | null;
  /** The step and epoch the contents carry (a torch dict's `global_step`/`step`, `epoch`). */
  step: number | null;
  epoch: number | null;
}

/** Random access to a file's bytes: tests use memory, the watcher an open file. */
export interface ByteSource {
  size: number;
  /** Up to `length` bytes from `offset` (fewer only at the end). */
  read(offset: number, length: number): Promise<Uint8Array>;
}

/** How much of a zip's end is read to find its end record (the record plus a maximal comment). */
const ZIP_TAIL = 22 + 0xffff + 20;
/** Central directories larger than this are not read (a checkpoint with ~700k tensors). */
const MAX_CENTRAL_DIRECTORY = 64 * 1024 * 1024;
/** safetensors headers larger than this are refused, as the safetensors library does. */
const MAX_SAFETENSORS_HEADER = 100 * 1024 * 1024;
/** How much of a torch dict's pickle is read for its first keys. */
const PICKLE_HEAD = 64 * 1024;

const ZIP_LOCAL = 0x04034b50;
const ZIP_CENTRAL = 0x02014b50;
const ZIP_END = 0x06054b50;
const ZIP64_END = 0x06064b50;
const ZIP64_LOCATOR = 0x07064b50;
const ZIP_MAGIC = new Uint8Array([0x50, 0x4b, 0x03, 0x04]);
const HDF5_SIGNATURE = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

/** The checkpoint formats of a file name, by extension (Keras's own before HDF5's). */
function expectedFormat(name: string): "safetensors" | "keras" | "hdf5" | null {
  const lower = name.toLowerCase();
  if (lower.endsWith(".safetensors")) return "safetensors";
  if (lower.endsWith(".keras")) return "keras";
  if (lower.endsWith(".h5") || lower.endsWith(".hdf5")) return "hdf5";
  return null;
}

const none = (format: string | null): Completeness => ({
  format,
  problem: null,
  step: null,
  epoch: null,
});
const incomplete = (format: string, problem: string): Completeness => ({
  format,
  problem,
  step: null,
  epoch: null,
});

/**
 * Checks the bytes of a single-file checkpoint called `name`. A file whose extension promises
 * a format (`.safetensors`, `.keras`, `.h5`) must be complete in that format; any other is
 * checked by what its first bytes are (a zip, safetensors, HDF5), and unchecked otherwise.
 */
export async function checkBytes(name: string, src: ByteSource): Promise<Completeness> {
  const expected = expectedFormat(name);
  const head = await src.read(0, Math.min(src.size, 16));
  if (src.size === 0) return incomplete(expected ?? "file", "the file is empty");
  if (expected === "safetensors") return await checkSafetensors(src);
  if (expected === "keras") {
    if (!isZipStart(head)) {
      return incomplete("keras", "a .keras file is a zip, and this one is not");
    }
    return await checkZip(src, "keras");
  }
  if (expected === "hdf5") return await checkHdf5(src);
  if (isZipStart(head)) return await checkZip(src, "torch-zip");
  if (startsWith(head, HDF5_SIGNATURE)) return await checkHdf5(src);
  // Cut inside the signature itself.
  if (head.length < 4 && startsWith(ZIP_MAGIC, [...head])) {
    return incomplete("torch-zip", "it ends inside the zip signature: the file was cut short");
  }
  if (looksLikeSafetensors(head, src.size)) return await checkSafetensors(src);
  return none(null);
}

/**
 * `checkBytes` on a file inside the folder `root`; a file that vanished or cannot be read is
 * null; a link out of `root` is not read (unchecked, as a format of its own).
 */
export async function checkFile(
  path: string,
  name: string,
  root: string,
): Promise<Completeness | null> {
  const opened = await openInside(path, root);
  if (opened === "gone") return null;
  if (opened === "outside") return none(null);
  const { file, size } = opened;
  try {
    return await checkBytes(name, fileSource(file, size));
  } catch {
    return null;
  } finally {
    file.close();
  }
}

/** A `ByteSource` over an open file of `size` bytes. */
export function fileSource(file: Deno.FsFile, size: number): ByteSource {
  return {
    size,
    async read(offset, length) {
      const want = Math.max(0, Math.min(length, size - offset));
      const buf = new Uint8Array(want);
      await file.seek(offset, Deno.SeekMode.Start);
      let got = 0;
      while (got < want) {
        const n = await file.read(buf.subarray(got));
        if (n === null) break;
        got += n;
      }
      return buf.subarray(0, got);
    },
  };
}

/** A `ByteSource` over bytes in memory. */
export function memorySource(bytes: Uint8Array): ByteSource {
  return {
    size: bytes.length,
    read: (offset, length) => Promise.resolve(bytes.subarray(offset, offset + length)),
  };
}

/**
 * Checks a checkpoint folder: a Hugging Face `checkpoint-N/` needs a `trainer_state.json` that
 * parses (its `global_step` and `epoch` are the checkpoint's); in any folder, each file of a
 * checkable format must be complete. Only files inside `root` are read.
 */
export async function checkFolder(dir: string, hf: boolean, root: string): Promise<Completeness> {
  const format = hf ? "hf-folder" : "folder";
  if (hf) {
    const opened = await openInside(join(dir, "trainer_state.json"), root);
    if (opened === "gone" || opened === "outside") {
      return incomplete(
        format,
        "no trainer_state.json yet: the Trainer writes it last, once the checkpoint is saved",
      );
    }
    let state: unknown;
    try {
      const bytes = await fileSource(opened.file, opened.size).read(0, opened.size);
      state = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      return incomplete(
        format,
        "trainer_state.json does not parse: it is still being written or was cut short",
      );
    } finally {
      opened.file.close();
    }
    const step = (state as { global_step?: unknown })?.global_step;
    const epoch = (state as { epoch?: unknown })?.epoch;
    for (const file of await filesBelow(dir, 4)) {
      const c = await checkFile(join(dir, file), file, root);
      if (c?.problem) return incomplete(format, `${file}: ${c.problem}`);
    }
    return {
      format,
      problem: null,
      step: Number.isSafeInteger(step) ? step as number : null,
      // The Trainer's epoch is fractional (1.5 = halfway through the second).
      epoch: typeof epoch === "number" && Number.isFinite(epoch) ? Math.floor(epoch) : null,
    };
  }
  for (const file of await filesBelow(dir, 4)) {
    const c = await checkFile(join(dir, file), file, root);
    if (c?.problem) return incomplete(format, `${file}: ${c.problem}`);
  }
  return none(format);
}

// ---- zip ----

function isZipStart(head: Uint8Array): boolean {
  return head.length >= 4 && u32(head, 0) === ZIP_LOCAL;
}

/**
 * A zip is complete when its end-of-central-directory record (zip64's too, when used) is at
 * its end and points at a central directory of as many entries as it says, each one's data
 * before the directory. Of a torch zip (any zip but a `.keras`), the first ints of its
 * `data.pkl` (the record every `torch.save` zip has) are read too.
 */
async function checkZip(src: ByteSource, format: "torch-zip" | "keras"): Promise<Completeness> {
  const torch = format === "torch-zip";
  const cut = (why: string) =>
    incomplete(format, `${why}: the zip was cut short (its writer did not finish)`);
  const tailStart = Math.max(0, src.size - ZIP_TAIL);
  const tail = await src.read(tailStart, src.size - tailStart);
  let endAt = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (u32(tail, i) === ZIP_END && i + 22 + u16(tail, i + 20) === tail.length) {
      endAt = i;
      break;
    }
  }
  if (endAt < 0) return cut("no end-of-central-directory record at its end");
  let entries = u16(tail, endAt + 10);
  let cdSize = u32(tail, endAt + 12);
  let cdOffset = u32(tail, endAt + 16);
  let cdEnd = tailStart + endAt; // where the directory must end
  // A zip64 end record (torch.save always writes one) sits between the directory and the
  // end record, and holds the true values.
  const loc = endAt - 20;
  const zip64 = loc >= 0 && u32(tail, loc) === ZIP64_LOCATOR;
  if (!zip64 && (entries === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff)) {
    return cut("no zip64 end locator");
  }
  if (zip64) {
    const recordAt = num64(tail, loc + 8);
    const record = await src.read(recordAt, 56);
    if (record.length < 56 || u32(record, 0) !== ZIP64_END) return cut("no zip64 end record");
    entries = num64(record, 32);
    cdSize = num64(record, 40);
    cdOffset = num64(record, 48);
    cdEnd = recordAt;
  }
  if (cdOffset + cdSize !== cdEnd) {
    return cut(
      `its central directory (${cdSize} bytes at ${cdOffset}) does not end where its end record starts (${cdEnd})`,
    );
  }
  if (cdSize > MAX_CENTRAL_DIRECTORY) return none(format); // too big to check, never cut
  const cd = await src.read(cdOffset, cdSize);
  let at = 0;
  let pickle: { offset: number; size: number; method: number } | null = null;
  let lastLocal = -1;
  for (let n = 0; n < entries; n++) {
    if (at + 46 > cd.length || u32(cd, at) !== ZIP_CENTRAL) {
      return cut(`central directory entry ${n + 1} of ${entries} is missing`);
    }
    const method = u16(cd, at + 10);
    let compressed = u32(cd, at + 20);
    let uncompressed = u32(cd, at + 24);
    const nameLength = u16(cd, at + 28);
    const extraLength = u16(cd, at + 30);
    const commentLength = u16(cd, at + 32);
    let local = u32(cd, at + 42);
    const name = new TextDecoder().decode(cd.subarray(at + 46, at + 46 + nameLength));
    // zip64 sizes and offset, in that order, for the fields that say 0xffffffff.
    let x = at + 46 + nameLength;
    const xEnd = x + extraLength;
    while (x + 4 <= xEnd) {
      const id = u16(cd, x);
      const len = u16(cd, x + 2);
      if (id === 0x0001) {
        let p = x + 4;
        if (uncompressed === 0xffffffff) (uncompressed = num64(cd, p), p += 8);
        if (compressed === 0xffffffff) (compressed = num64(cd, p), p += 8);
        if (local === 0xffffffff) local = num64(cd, p);
      }
      x += 4 + len;
    }
    if (local + 30 + compressed > cdOffset) {
      return cut(`entry "${name}" runs past the start of the central directory`);
    }
    lastLocal = Math.max(lastLocal, local);
    if (name === "data.pkl" || name.endsWith("/data.pkl")) {
      pickle = { offset: local, size: compressed, method };
    }
    at += 46 + nameLength + extraLength + commentLength;
  }
  if (lastLocal >= 0) {
    const header = await src.read(lastLocal, 4);
    if (header.length < 4 || u32(header, 0) !== ZIP_LOCAL) {
      return cut("its last entry's local header is not where the directory says");
    }
  }
  if (!torch) return none(format);
  if (!pickle) return none("zip"); // a zip, but not one torch.save wrote
  const result = none(format);
  if (pickle.method === 0) {
    const local = await src.read(pickle.offset, 30);
    const dataAt = pickle.offset + 30 + u16(local, 26) + u16(local, 28);
    const ints = readTopLevelInts(await src.read(dataAt, Math.min(pickle.size, PICKLE_HEAD)));
    result.step = ints.get("global_step") ?? ints.get("step") ?? null;
    result.epoch = ints.get("epoch") ?? null;
  }
  return result;
}

// ---- safetensors ----

function looksLikeSafetensors(head: Uint8Array, size: number): boolean {
  if (head.length < 9) return false;
  const n = num64(head, 0);
  return n > 1 && 8 + n <= size && head[8] === 0x7b; // "{"
}

async function checkSafetensors(src: ByteSource): Promise<Completeness> {
  const format = "safetensors";
  if (src.size < 8) return incomplete(format, "shorter than its 8-byte header length");
  const n = num64(await src.read(0, 8), 0);
  if (n > MAX_SAFETENSORS_HEADER) {
    return incomplete(format, `its header length (${n} bytes) is not that of a safetensors file`);
  }
  if (8 + n > src.size) {
    return incomplete(format, `its ${n}-byte header runs past its end: the file was cut short`);
  }
  let header: Record<string, { data_offsets?: unknown }>;
  try {
    header = JSON.parse(new TextDecoder().decode(await src.read(8, n)));
  } catch {
    return incomplete(format, "its header is not JSON: the file was cut short or is damaged");
  }
  let end = 0;
  for (const [key, entry] of Object.entries(header ?? {})) {
    if (key === "__metadata__") continue;
    const range = entry?.data_offsets;
    if (!Array.isArray(range) || range.length !== 2 || !Number.isSafeInteger(range[1])) {
      return incomplete(format, `tensor "${key}" has no byte range in the header`);
    }
    end = Math.max(end, range[1]);
  }
  const expected = 8 + n + end;
  if (src.size !== expected) {
    return incomplete(
      format,
      `it is ${src.size} bytes, its header says ${expected}` +
        (src.size < expected ? ": the file was cut short" : ""),
    );
  }
  return none(format);
}

// ---- HDF5 ----

async function checkHdf5(src: ByteSource): Promise<Completeness> {
  const format = "hdf5";
  // The superblock sits at 0, or after a user block of 512, 1024, 2048… bytes.
  let at = -1;
  for (let p = 0; p + 8 <= src.size; p = p === 0 ? 512 : p * 2) {
    if (startsWith(await src.read(p, 8), HDF5_SIGNATURE)) {
      at = p;
      break;
    }
    if (p >= 1 << 20) break;
  }
  if (at < 0) return incomplete(format, "no HDF5 signature: not an HDF5 file, or an empty one");
  const sb = await src.read(at, 96);
  if (sb.length < 16) return incomplete(format, "its superblock was cut short");
  const version = sb[8];
  let sizeOfOffsets: number;
  let baseAt: number;
  if (version === 0 || version === 1) {
    sizeOfOffsets = sb[13];
    baseAt = version === 0 ? 24 : 28;
  } else if (version === 2 || version === 3) {
    sizeOfOffsets = sb[9];
    baseAt = 12;
  } else {
    return none(format); // a superblock this check does not know
  }
  if (sizeOfOffsets !== 8 && sizeOfOffsets !== 4) return none(format);
  const offset = (i: number) => sizeOfOffsets === 8 ? num64(sb, i) : u32(sb, i);
  if (sb.length < baseAt + 4 * sizeOfOffsets) {
    return incomplete(format, "its superblock was cut short");
  }
  const base = offset(baseAt);
  const eof = offset(baseAt + 2 * sizeOfOffsets);
  // The library writes the end address when it closes the file and truncates the file to it:
  // a file still open (or cut short) is longer or shorter than its superblock says.
  if (base + eof !== src.size) {
    return incomplete(
      format,
      `it is ${src.size} bytes, its superblock says ${base + eof}: ` +
        (src.size < base + eof ? "the file was cut short" : "it is still open for writing"),
    );
  }
  return none(format);
}

// ---- pickle ----

/**
 * The int values among the first keys of a pickled dict (`torch.save({"epoch": 2,
 * "global_step": 84, ...})`, as Lightning saves), stopping at the first value that is not a
 * plain scalar. Only the opcodes such a dict's head uses are read (protocols 2 to 5).
 */
export function readTopLevelInts(bytes: Uint8Array): Map<string, number> {
  const out = new Map<string, number>();
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let i = 0;
  const skipMemo = () => {
    while (i < bytes.length) {
      const op = bytes[i];
      if (op === 0x71) i += 2; // BINPUT
      else if (op === 0x72) i += 5; // LONG_BINPUT
      else if (op === 0x94) i += 1; // MEMOIZE
      else return;
    }
  };
  if (bytes[i] === 0x80) i += 2; // PROTO
  if (bytes[i] === 0x95) i += 9; // FRAME
  if (bytes[i] !== 0x7d) return out; // EMPTY_DICT
  i++;
  skipMemo();
  if (bytes[i] === 0x28) i++; // MARK (SETITEMS follows the pairs)
  const text = (from: number, length: number) =>
    from + length <= bytes.length
      ? new TextDecoder().decode(bytes.subarray(from, from + length))
      : null;
  while (i < bytes.length) {
    let key: string | null = null;
    const op = bytes[i];
    if (op === 0x58 && i + 5 <= bytes.length) { // BINUNICODE
      const n = view.getUint32(i + 1, true);
      key = text(i + 5, n);
      i += 5 + n;
    } else if (op === 0x8c && i + 2 <= bytes.length) { // SHORT_BINUNICODE
      key = text(i + 2, bytes[i + 1]);
      i += 2 + bytes[i + 1];
    } else return out;
    if (key === null) return out;
    skipMemo();
    const v = bytes[i];
    let value: number | null = null;
    if (v === 0x4b && i + 2 <= bytes.length) (value = bytes[i + 1], i += 2); // BININT1
    else if (v === 0x4d && i + 3 <= bytes.length) (value = view.getUint16(i + 1, true), i += 3);
    else if (v === 0x4a && i + 5 <= bytes.length) (value = view.getInt32(i + 1, true), i += 5);
    else if (v === 0x8a && i + 2 <= bytes.length) { // LONG1
      const n = bytes[i + 1];
      if (n > 7 || i + 2 + n > bytes.length) return out;
      value = 0;
      for (let k = n - 1; k >= 0; k--) value = value * 256 + bytes[i + 2 + k];
      if (n > 0 && bytes[i + 1 + n] & 0x80) value -= 2 ** (8 * n);
      i += 2 + n;
    } else if (v === 0x4e || v === 0x88 || v === 0x89) i += 1; // None, True, False
    else if (v === 0x47 && i + 9 <= bytes.length) i += 9; // BINFLOAT
    else if (v === 0x58 && i + 5 <= bytes.length) i += 5 + view.getUint32(i + 1, true);
    else if (v === 0x8c && i + 2 <= bytes.length) i += 2 + bytes[i + 1];
    else return out;
    if (value !== null && !out.has(key)) out.set(key, value);
    skipMemo();
    if (bytes[i] === 0x73) i++; // SETITEM after a single pair
  }
  return out;
}

// ---- bytes ----

function startsWith(bytes: Uint8Array, prefix: number[]): boolean {
  return bytes.length >= prefix.length && prefix.every((b, i) => bytes[i] === b);
}

function u16(b: Uint8Array, i: number): number {
  return i + 2 <= b.length ? b[i] | (b[i + 1] << 8) : -1;
}

function u32(b: Uint8Array, i: number): number {
  return i + 4 <= b.length ? (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16)) + b[i + 3] * 2 ** 24 : -1;
}

/** A little-endian 64-bit number; past 2^53 it is not exact, and is only compared. */
function num64(b: Uint8Array, i: number): number {
  if (i + 8 > b.length) return -1;
  return u32(b, i) + u32(b, i + 4) * 2 ** 32;
}
