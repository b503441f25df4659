// Finding event files under a directory and reading the scalars in a byte range of one,
// a bounded chunk at a time, so a large file is never held in memory whole.

import { decodeScalars, type EventNotes, type ScalarPoint } from "./event_decoder.ts";
import { ProtobufError } from "./protobuf.ts";
import { readRecords, RECORD_OVERHEAD } from "./record_reader.ts";

/** File names TensorFlow, Keras and PyTorch writers give event files. */
export const EVENT_FILE_PREFIX = "events.out.tfevents.";
/** Bytes read per I/O call; a record larger than this is read whole in one bigger call. */
export const DEFAULT_CHUNK_BYTES = 1 << 20;

/** An event file found under a root directory. */
export interface EventFile {
  /** Path to open. */
  path: string;
  /** Path relative to the root, "/"-separated: the file's identity in tailer state. */
  relPath: string;
  /** Folder relative to the root ("" for the root itself): the prefix of the file's tags. */
  dir: string;
  /** Unix seconds from the file name, 0 when the name carries none. */
  timestamp: number;
}

/** The creation timestamp writers put in the name: `events.out.tfevents.<unix_ts>.<host>…`. */
export function eventFileTimestamp(name: string): number {
  const match = /^events\.out\.tfevents\.(\d+)/.exec(name);
  return match ? Number(match[1]) : 0;
}

/**
 * The process id writers put in the name (`events.out.tfevents.<ts>.<host>.<pid>.<n>`, with
 * `.v2` from TF2; the host may hold dots), or null when the name carries none.
 */
export function eventFileWriterPid(name: string): number | null {
  const match = /^events\.out\.tfevents\.\d+(?:\.\d+)?\..+\.(\d+)\.\d+(?:\.v2)?$/.exec(name);
  if (!match) return null;
  const pid = Number(match[1]);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
}

/** Orders files oldest first: by name timestamp, then relative path (TensorBoard's order). */
export function compareEventFiles(a: EventFile, b: EventFile): number {
  if (a.timestamp !== b.timestamp) return a.timestamp - b.timestamp;
  return a.relPath < b.relPath ? -1 : a.relPath > b.relPath ? 1 : 0;
}

/**
 * Every event file under `root`, oldest first; a missing root has none. `folders`, when
 * given, gets the path of every folder whose entries were listed (a file added to or removed
 * from one of them changes its modification time).
 */
export async function listEventFiles(root: string, folders?: string[]): Promise<EventFile[]> {
  const base = root.length > 1 ? root.replace(/\/+$/, "") : root;
  const files: EventFile[] = [];
  await walk(base, "", files, folders);
  return files.sort(compareEventFiles);
}

async function walk(
  path: string,
  dir: string,
  out: EventFile[],
  folders: string[] | undefined,
): Promise<void> {
  folders?.push(path);
  const entries: Deno.DirEntry[] = [];
  try {
    for await (const entry of Deno.readDir(path)) entries.push(entry);
  } catch (error) {
    // A job may not have created its log dir yet, or may delete a subfolder mid-walk.
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  for (const entry of entries) {
    const childPath = `${path}/${entry.name}`;
    const relPath = dir === "" ? entry.name : `${dir}/${entry.name}`;
    // Symlinked folders are not followed: a link back up the tree would never end.
    if (entry.isDirectory) {
      await walk(childPath, relPath, out, folders);
    } else if (entry.name.startsWith(EVENT_FILE_PREFIX) && (entry.isFile || entry.isSymlink)) {
      out.push({ path: childPath, relPath, dir, timestamp: eventFileTimestamp(entry.name) });
    }
  }
}

/** What reading one byte range of an event file produced. */
export interface RangeRead {
  /** Scalars in file order, tags as written (no folder prefix). */
  points: ScalarPoint[];
  /** Where the next read must start: the end of the last complete record consumed. */
  nextOffset: number;
  /** Records whose CRCs matched. */
  records: number;
  /** Records skipped for a bad payload CRC. */
  badCrc: number;
  /** Records whose CRC matched but whose bytes were not a valid Event message. */
  undecodable: number;
  /** A length CRC mismatched at `nextOffset`: the rest of the file cannot be framed. */
  framingLost: boolean;
}

/**
 * Reads the complete records of `file` between `offset` and `end` (its size when it was
 * stat'ed) and decodes their scalars, updating the file's `scalarTags` (and `notes`, when
 * given: what was skipped, the hparams). A record cut off at `end` is left for a later read.
 * `inPlace`: the file is on a local disk, read without a hand-off to another thread.
 */
export async function readEventRange(
  file: Deno.FsFile,
  offset: number,
  end: number,
  scalarTags: Set<string>,
  chunkBytes: number = DEFAULT_CHUNK_BYTES,
  notes?: EventNotes,
  inPlace = false,
): Promise<RangeRead> {
  const result: RangeRead = {
    points: [],
    nextOffset: offset,
    records: 0,
    badCrc: 0,
    undecodable: 0,
    framingLost: false,
  };
  // At least one header, so that every read can make progress.
  const chunk = Math.max(chunkBytes, RECORD_OVERHEAD);
  let want = chunk;
  while (result.nextOffset < end) {
    const start = result.nextOffset;
    const length = Math.min(want, end - start);
    const bytes = inPlace ? readAtSync(file, start, length) : await readAt(file, start, length);
    const batch = readRecords(bytes, 0);
    for (const record of batch.records) {
      try {
        for (const point of decodeScalars(record, scalarTags, notes)) result.points.push(point);
      } catch (error) {
        if (!(error instanceof ProtobufError)) throw error;
        result.undecodable++;
      }
    }
    result.records += batch.records.length;
    result.badCrc += batch.badCrc;
    result.nextOffset = start + batch.nextOffset;
    if (batch.framingLost) {
      result.framingLost = true;
      break;
    }
    // A short read means the file shrank under us; the caller notices on its next stat.
    if (bytes.length < length) break;
    // The next record does not end before `end` (one still being written): it is not read
    // again now, only to find it still cut off.
    if (batch.needed > 0 && result.nextOffset + batch.needed > end) break;
    // Nothing consumed: the next record is larger than a chunk.
    want = batch.nextOffset === 0 ? batch.needed : chunk;
  }
  return result;
}

/** `readAt` in place: for a file on a local disk, where a read returns at once. */
function readAtSync(file: Deno.FsFile, position: number, length: number): Uint8Array {
  const buffer = new Uint8Array(length);
  file.seekSync(position, Deno.SeekMode.Start);
  let filled = 0;
  while (filled < length) {
    const n = file.readSync(buffer.subarray(filled));
    if (n === null) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}

async function readAt(file: Deno.FsFile, position: number, length: number): Promise<Uint8Array> {
  const buffer = new Uint8Array(length);
  // A seek only sets the open file's offset (no I/O, even on a network file system): done in
  // place, it spares a hand-off to another thread.
  file.seekSync(position, Deno.SeekMode.Start);
  let filled = 0;
  while (filled < length) {
    const n = await file.read(buffer.subarray(filled));
    if (n === null) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}
