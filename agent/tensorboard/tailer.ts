// Tails the TensorBoard event files under one directory, returning only scalars it has
// not returned before, and reconciles event files that log the same tag and step.

import {
  createEventNotes,
  type EventNotes,
  type ScalarPoint,
  type SkippedKind,
} from "./event_decoder.ts";
import {
  DEFAULT_CHUNK_BYTES,
  type EventFile,
  listEventFiles,
  type RangeRead,
  readEventRange,
} from "./event_file.ts";
import { openInside } from "../open_inside.ts";

/** Where reading of one event file stands; part of `TailerState`. */
export interface TailerFileState {
  /** Bytes consumed: always the end of a complete record. */
  offset: number;
  /** Tags known to be scalars in this file (TF2 writes the plugin name only once per tag). */
  scalarTags: string[];
  /** Inode when the file was last read, to notice a file replaced by one of equal size. */
  ino: number | null;
  /** The file's framing was lost at `offset`; it is not read again unless replaced. */
  framingLost: boolean;
  /** `accept` turned the file down: it is not read unless replaced. @default false */
  refused?: boolean;
}

/** JSON-serialisable progress of a tailer; pass it back to resume without rereading. */
export interface TailerState {
  version: 1;
  /** Keyed by the file's path relative to the root, "/"-separated. */
  files: Record<string, TailerFileState>;
}

/** Options of `TensorBoardTailer`; every field is optional. */
export interface TailerOptions {
  /** Progress saved from `state()`. @default nothing read yet */
  state?: TailerState;
  /** Bytes per read call. @default DEFAULT_CHUNK_BYTES (1 MiB) */
  chunkBytes?: number;
  /**
   * Finds the event files to tail, oldest first; each file's `dir` is its tags' prefix and
   * the group whose files compete for a (tag, step). A list that pushes onto `folders` the
   * folders whose entries decided its answer is not called again while none of them changed
   * (see {@linkcode RELIST_MS}).
   * @default listEventFiles: every file under the root, prefixed by its folder
   */
  list?: (root: string, folders?: string[]) => Promise<EventFile[]>;
  /**
   * True when `dev` (a `st_dev`) is a local file system, where a stat or read of an open file
   * returns at once: the tailer then makes them in place, without a hand-off to another
   * thread (an open file is never looked up by path again, so a link cannot lead such a
   * call elsewhere). @default none is: every call goes to another thread
   */
  localDevice?: (dev: number) => boolean;
  /**
   * Asked once for each file the tailer has not seen (and again when one is replaced): false
   * leaves it unread, as another writer's. @default every file is read
   */
  accept?: (file: EventFile) => boolean;
  /**
   * While a listing that found files holds, its folders are looked at (a stat each) at most
   * this often: a poll in between reads the files it knows without them, and a file added
   * meanwhile is found by the next look. A listing that found none is looked at every poll,
   * so a job's first file is found as soon as ever. @default 0 (every poll)
   */
  folderCheckMs?: number;
}

/** Counters since the tailer was constructed. */
export interface TailerStats {
  /** Event files currently known. */
  files: number;
  /** Records read with a good CRC. */
  records: number;
  /** Points returned by `poll()`. */
  points: number;
  /** Points not returned because a newer file in the same folder has that tag and step. */
  superseded: number;
  /** Records skipped for a bad payload CRC. */
  badCrc: number;
  /** Records with a good CRC that were not valid Event messages. */
  undecodable: number;
  /** Times a file's framing was lost (each file counts once until it is replaced). */
  framingLost: number;
  /** Files that could not be read in a poll; they are retried from the same offset. */
  errors: number;
  /** The last such error, for the agent's log. */
  lastError: string | null;
}

interface Cursor {
  offset: number;
  scalarTags: Set<string>;
  ino: number | null;
  framingLost: boolean;
  refused: boolean;
  /** In memory only: what this tailer skipped in the file, and its hparams. */
  notes: EventNotes;
  /** Bytes after the last complete record at the last read: a record still being written. */
  tailBytes: number;
  /**
   * The file, kept open between polls: the inode `ino` names, opened when its path led inside
   * the folder (see `openInside`). Closed when the path leads to another inode.
   */
  handle: Deno.FsFile | null;
  /** The device of `handle`'s file (inode numbers are unique within one device only). */
  dev: number | null;
  /** `handle` is on a local file system (see `TailerOptions.localDevice`). */
  local: boolean;
}

/** A folder a listing read, and its modification time then (-1: it did not exist). */
interface Folder {
  path: string;
  time: number;
  /** Open on a local file system, for a stat in place; else it is looked up by path. */
  handle: Deno.FsFile | null;
}

interface Listing {
  files: EventFile[];
  folders: Folder[];
  /** Unix ms when the listing began. */
  at: number;
  /** Unix ms when its folders' times were last looked at. */
  checked: number;
}

/**
 * How long a listing of event files serves while none of its folders changed (a folder's
 * modification time moves when an entry is added, removed or renamed in it): a poll then
 * costs a stat of each folder instead of listing them. Past this the folders are listed
 * again anyway, for what their times do not show (a log root made inside a subfolder of the
 * working dir). A listing that found no file is kept for less: a job's first file is found
 * within {@linkcode RELIST_EMPTY_MS} even where no watched folder shows it.
 */
export const RELIST_MS = 10_000;
/** See {@linkcode RELIST_MS}. */
export const RELIST_EMPTY_MS = 3000;
/**
 * A folder changed this close to its listing may have changed again within the same tick of
 * the file system's clock, after the listing read it: it is listed again until it is older.
 */
const FOLDER_SETTLE_MS = 2000;

/**
 * Files a tailer keeps open between polls (more are opened for each read): a file that grows
 * is then read with a seek and a read, without resolving its path and opening it again.
 */
export const MAX_OPEN_FILES = 16;
/** Folders a tailer keeps open between polls, on local disks, to see whether they changed. */
export const MAX_OPEN_FOLDERS = 16;

/** What a tailer left out of the files it read (an import reports it). */
export interface SkippedReport {
  /** Values and records that are not scalars, by kind. */
  skipped: Partial<Record<SkippedKind, number>>;
  /** Files that end in an incomplete record (cut off, or still being written). */
  truncated_tails: number;
  /** Records with a bad CRC or bytes that are not an Event, and files whose framing was lost. */
  corrupt: number;
  /** The hparams plugin's session data, newest file last (keys of later files win); or null. */
  hparams: Record<string, string | number | boolean | null> | null;
}

/**
 * Tails every `events.out.tfevents.*` file under `root`, recursively. Tags of files in a
 * subfolder get the folder as prefix (`train/epoch_loss`); files in the root keep theirs.
 * A `list` option finds the files instead, giving each its prefix (its `dir`): files of one
 * `dir` are "one folder" below.
 *
 * Merge contract: a consumer that applies the points of successive `poll()` calls in the
 * order returned, keeping the last write per (tag, step), ends with TensorBoard's value:
 * where several files of one folder hold the same tag and step, the newest file wins
 * (ordered by the timestamp in the name, then by path). Two rules make that hold while
 * files grow in any interleaving: each poll reads files oldest first, so within a poll a
 * newer file's point comes after an older one's; and an older file's point is dropped
 * (counted in `superseded`) when a newer file of its folder holds that tag and step in
 * bytes an earlier poll read. So one (tag, step) may be returned more than once (an older
 * file's value, then the newer file's), but never an older value after a newer one.
 * Files in different folders never compete: their tags differ by the folder prefix.
 *
 * To know what a newer file holds, the tailer indexes its (tag, step)s, but only once an
 * older file of its folder grows after it, which a restarted job writing a fresh file
 * never causes; the index is rebuilt by rereading that file, so it is not in `state()`.
 */
export class TensorBoardTailer {
  /** The directory being tailed. */
  readonly root: string;
  #chunkBytes: number;
  #list: (root: string, folders?: string[]) => Promise<EventFile[]>;
  /** The last listing, with the modification time of each folder it read. */
  #listing: Listing | null = null;
  #localDevice: (dev: number) => boolean;
  #accept: ((file: EventFile) => boolean) | null;
  #folderCheckMs: number;
  #cursors = new Map<string, Cursor>();
  // relPath → prefixed tag → steps in the file's consumed bytes; see the class comment.
  #index = new Map<string, Map<string, Set<number>>>();
  #stats: TailerStats = {
    files: 0,
    records: 0,
    points: 0,
    superseded: 0,
    badCrc: 0,
    undecodable: 0,
    framingLost: 0,
    errors: 0,
    lastError: null,
  };
  #running: Promise<unknown> = Promise.resolve();
  /** Cursors holding a handle. */
  #open = 0;

  /** A tailer over `root`; a `state` of an unknown version is ignored (points are reread). */
  constructor(root: string, options: TailerOptions = {}) {
    this.root = root;
    this.#chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
    this.#list = options.list ?? listEventFiles;
    this.#accept = options.accept ?? null;
    this.#localDevice = options.localDevice ?? (() => false);
    this.#folderCheckMs = options.folderCheckMs ?? 0;
    if (!Number.isSafeInteger(this.#chunkBytes) || this.#chunkBytes < 1) {
      throw new RangeError(
        `Cannot tail "${root}": chunkBytes must be a positive integer, got ${options.chunkBytes}`,
      );
    }
    const state = options.state;
    if (state?.version !== 1 || typeof state.files !== "object" || state.files === null) return;
    for (const [relPath, file] of Object.entries(state.files)) {
      // Saved by the agent itself, but a hand-edited or truncated file must not crash it:
      // a doubtful entry restarts that file from 0, which rewrites identical points.
      if (typeof file !== "object" || file === null) continue;
      const offset = Number.isSafeInteger(file.offset) && file.offset > 0 ? file.offset : 0;
      this.#cursors.set(relPath, {
        offset,
        scalarTags: new Set(Array.isArray(file.scalarTags) ? file.scalarTags : []),
        ino: typeof file.ino === "number" ? file.ino : null,
        framingLost: file.framingLost === true,
        refused: file.refused === true,
        notes: createEventNotes(),
        tailBytes: 0,
        handle: null,
        dev: null,
        local: false,
      });
    }
  }

  /**
   * Has the next poll look at the folders whatever `folderCheckMs` says: the last poll after a
   * job ended must find a file it added since the last look (Keras's `validation/` folder,
   * written at the end of the first epoch), or its points would never be read.
   */
  lookAtFoldersNext(): void {
    if (this.#listing !== null) this.#listing.checked = -Infinity;
  }

  /** Reads what was appended since the last poll and returns the new points, oldest file first. */
  poll(): Promise<ScalarPoint[]> {
    // Polls share cursors, so an overlapping call waits for the one in flight.
    const next = this.#running.then(() => this.#poll(), () => this.#poll());
    this.#running = next;
    return next;
  }

  /** Progress to persist; `new TensorBoardTailer(root, {state})` resumes from it. */
  state(): TailerState {
    const files: Record<string, TailerFileState> = {};
    for (const [relPath, cursor] of this.#cursors) {
      files[relPath] = {
        offset: cursor.offset,
        scalarTags: [...cursor.scalarTags],
        ino: cursor.ino,
        framingLost: cursor.framingLost,
        ...(cursor.refused ? { refused: true } : {}),
      };
    }
    return { version: 1, files };
  }

  /** Counters since construction. */
  stats(): TailerStats {
    return { ...this.#stats, files: this.#cursors.size };
  }

  /** Closes the files kept open; a later poll opens them again. */
  close(): Promise<void> {
    const next = this.#running.then(() => this.#closeAll(), () => this.#closeAll());
    this.#running = next;
    return next;
  }

  #closeAll(): void {
    for (const cursor of this.#cursors.values()) closeHandle(cursor);
    this.#open = 0;
    for (const folder of this.#listing?.folders ?? []) folder.handle?.close();
    this.#listing = null;
  }

  /** What the polls so far left out of the files still present, and their hparams. */
  skippedReport(): SkippedReport {
    const report: SkippedReport = {
      skipped: {},
      truncated_tails: 0,
      corrupt: this.#stats.badCrc + this.#stats.undecodable + this.#stats.framingLost,
      hparams: null,
    };
    // Map order is first-seen order, which is oldest file first.
    for (const cursor of this.#cursors.values()) {
      for (const [kind, n] of Object.entries(cursor.notes.skipped)) {
        const k = kind as SkippedKind;
        report.skipped[k] = (report.skipped[k] ?? 0) + n;
      }
      if (cursor.tailBytes > 0 && !cursor.framingLost) report.truncated_tails++;
      if (cursor.notes.hparams) report.hparams = { ...report.hparams, ...cursor.notes.hparams };
    }
    return report;
  }

  /**
   * The event files: the last listing while its folders are unchanged (`listed` false), else
   * a new one.
   */
  async #files(): Promise<{ files: EventFile[]; listed: boolean }> {
    const last = this.#listing;
    const now = Date.now();
    if (
      last !== null && last.files.length > 0 && now - last.checked < this.#folderCheckMs &&
      now - last.at < RELIST_MS
    ) {
      return { files: last.files, listed: false };
    }
    if (last !== null && await unchanged(last)) {
      last.checked = now;
      return { files: last.files, listed: false };
    }
    this.#listing = null;
    if (last !== null) { for (const folder of last.folders) folder.handle?.close(); }
    const at = Date.now();
    const paths: string[] = [];
    const files = await this.#list(this.root, paths);
    if (paths.length > 0) {
      const folders = await Promise.all(
        paths.map((path, i) => watchFolder(path, i < MAX_OPEN_FOLDERS ? this.#localDevice : null)),
      );
      if (folders.every((folder) => folder !== null)) {
        this.#listing = { files, folders: folders as Folder[], at, checked: at };
      } else {
        for (const folder of folders) folder?.handle?.close();
      }
    }
    return { files, listed: true };
  }

  async #poll(): Promise<ScalarPoint[]> {
    const { files, listed } = await this.#files();
    const present = new Set(files.map((file) => file.relPath));
    for (const relPath of this.#cursors.keys()) {
      if (!present.has(relPath)) this.#forget(relPath);
    }
    const out: ScalarPoint[] = [];
    for (let i = 0; i < files.length; i++) {
      const file = files[i];
      try {
        const read = await this.#readNew(file, listed);
        if (read === undefined) continue;
        // Looked up before the cursor moves: if this throws, the bytes are read again next
        // poll instead of their points being lost.
        const newer = read.points.length > 0 ? await this.#newerIndexes(files, i) : [];
        this.#commit(file.relPath, read);
        const own = this.#index.get(file.relPath);
        for (const point of read.points) {
          const tag = file.dir === "" ? point.tag : `${file.dir}/${point.tag}`;
          if (own) addStep(own, tag, point.step);
          if (newer.some((index) => index.get(tag)?.has(point.step))) {
            this.#stats.superseded++;
            continue;
          }
          out.push({ tag, step: point.step, value: point.value, wall_time: point.wall_time });
        }
      } catch (error) {
        // One unreadable file (permissions, I/O error) must not hold back the others.
        this.#stats.errors++;
        this.#stats.lastError = `Cannot read event file "${file.path}": ${String(error)}`;
      }
    }
    this.#stats.points += out.length;
    return out;
  }

  #commit(relPath: string, read: RangeRead): void {
    const cursor = this.#cursors.get(relPath);
    if (cursor === undefined) return;
    cursor.offset = read.nextOffset;
    cursor.framingLost = read.framingLost;
    this.#stats.records += read.records;
    this.#stats.badCrc += read.badCrc;
    this.#stats.undecodable += read.undecodable;
    if (read.framingLost) this.#stats.framingLost++;
  }

  /**
   * Reads a file from its cursor to its current size (without moving the cursor). `listed`:
   * its folder was listed in this poll, so the file at its path may be another one now.
   */
  async #readNew(file: EventFile, listed: boolean): Promise<RangeRead | undefined> {
    let cursor = this.#cursors.get(file.relPath);
    if (cursor === undefined) {
      cursor = this.#newCursor(file);
      this.#cursors.set(file.relPath, cursor);
    }
    let info: Pick<Deno.FileInfo, "size" | "ino" | "dev" | "isFile">;
    try {
      // A file open on a local disk, in a folder that did not change: its size, in place,
      // from a seek to its end (a stat of an open file has Deno resolve the path it was
      // opened by, a `readlink` per folder of it, to check the read permission again; a
      // seek does not). The open file is the inode the cursor names. Otherwise a stat by
      // path, the whole cost of a poll for a file with nothing new.
      info = !listed && cursor.handle !== null && cursor.local
        ? {
          size: cursor.handle.seekSync(0, Deno.SeekMode.End),
          ino: cursor.ino,
          dev: cursor.dev!,
          isFile: true,
        }
        : await Deno.stat(file.path);
    } catch (error) {
      // Deleted between the directory walk and now: the next poll forgets it.
      if (error instanceof Deno.errors.NotFound) return undefined;
      throw error;
    }
    if (!info.isFile) return undefined;
    const replaced = cursor.ino !== null && info.ino !== null && info.ino !== cursor.ino;
    // The path leads to another device than the open file's: the file is opened afresh.
    if (cursor.handle !== null && info.dev !== cursor.dev) this.#release(cursor, cursor.handle);
    if (info.size < cursor.offset || replaced) {
      this.#forget(file.relPath);
      cursor = this.#newCursor(file);
      this.#cursors.set(file.relPath, cursor);
    }
    cursor.ino = info.ino;
    if (cursor.framingLost || cursor.refused || info.size === cursor.offset) return undefined;
    let handle = cursor.handle;
    if (handle === null) {
      // Only a file inside the folder followed: a job may plant a link to a file the agent
      // (possibly root) can read and the job cannot; such a file is never read.
      const opened = await openInside(file.path, this.root);
      if (opened === "gone") return undefined;
      if (opened === "outside") {
        cursor.refused = true;
        return undefined;
      }
      // Replaced between the stat and the open: the next poll starts it over.
      if (opened.ino !== info.ino) {
        opened.file.close();
        return undefined;
      }
      handle = opened.file;
    }
    let kept = false;
    try {
      const read = await readEventRange(
        handle,
        cursor.offset,
        info.size,
        cursor.scalarTags,
        this.#chunkBytes,
        cursor.notes,
        this.#localDevice(info.dev),
      );
      cursor.tailBytes = info.size - read.nextOffset;
      kept = this.#keep(file.relPath, cursor, handle, info.dev);
      return read;
    } finally {
      // A read that failed opens the file again next time.
      if (!kept) this.#release(cursor, handle);
    }
  }

  /** Keeps `handle` open in `cursor` for the next poll, while under MAX_OPEN_FILES. */
  #keep(relPath: string, cursor: Cursor, handle: Deno.FsFile, dev: number): boolean {
    if (cursor.handle === handle) return true;
    // Forgotten meanwhile (a concurrent close), or too many open: closed after this read.
    if (this.#cursors.get(relPath) !== cursor || this.#open >= MAX_OPEN_FILES) return false;
    cursor.handle = handle;
    cursor.dev = dev;
    cursor.local = this.#localDevice(dev);
    this.#open++;
    return true;
  }

  #release(cursor: Cursor, handle: Deno.FsFile): void {
    if (cursor.handle === handle) {
      closeHandle(cursor);
      this.#open--;
    } else {
      handle.close();
    }
  }

  /** Step indexes of the files of `files[i]`'s folder that are newer and already read. */
  async #newerIndexes(
    files: EventFile[],
    i: number,
  ): Promise<Map<string, Set<number>>[]> {
    const indexes: Map<string, Set<number>>[] = [];
    for (const file of files.slice(i + 1)) {
      const offset = this.#cursors.get(file.relPath)?.offset ?? 0;
      if (file.dir !== files[i].dir || offset === 0) continue;
      let index = this.#index.get(file.relPath);
      if (index === undefined) {
        index = await this.#buildIndex(file, offset);
        this.#index.set(file.relPath, index);
      }
      indexes.push(index);
    }
    return indexes;
  }

  /** Rereads the first `end` bytes of a file (what earlier polls consumed) for its steps. */
  async #buildIndex(file: EventFile, end: number): Promise<Map<string, Set<number>>> {
    const index = new Map<string, Set<number>>();
    const opened = await openInside(file.path, this.root);
    if (typeof opened === "string") return index;
    const handle = opened.file;
    try {
      const read = await readEventRange(handle, 0, end, new Set(), this.#chunkBytes);
      for (const point of read.points) {
        addStep(index, file.dir === "" ? point.tag : `${file.dir}/${point.tag}`, point.step);
      }
    } finally {
      handle.close();
    }
    return index;
  }

  /** A cursor at the start of a file first seen (or replaced), refused when `accept` says so. */
  #newCursor(file: EventFile): Cursor {
    const cursor = newCursor();
    cursor.refused = this.#accept !== null && !this.#accept(file);
    return cursor;
  }

  #forget(relPath: string): void {
    const cursor = this.#cursors.get(relPath);
    if (cursor?.handle) {
      closeHandle(cursor);
      this.#open--;
    }
    this.#cursors.delete(relPath);
    this.#index.delete(relPath);
  }
}

function newCursor(): Cursor {
  return {
    offset: 0,
    scalarTags: new Set(),
    ino: null,
    framingLost: false,
    refused: false,
    notes: createEventNotes(),
    tailBytes: 0,
    handle: null,
    dev: null,
    local: false,
  };
}

/**
 * A folder of a listing with its modification time; null when it cannot be known. With
 * `localDevice` (under the cap on open folders) a folder on a local disk is kept open, so
 * that later checks are a stat in place.
 */
async function watchFolder(
  path: string,
  localDevice: ((dev: number) => boolean) | null,
): Promise<Folder | null> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (error) {
    return error instanceof Deno.errors.NotFound ? { path, time: -1, handle: null } : null;
  }
  const time = info.mtime?.getTime();
  if (time === undefined) return null;
  if (!info.isDirectory || localDevice === null || !localDevice(info.dev)) {
    return { path, time, handle: null };
  }
  try {
    const handle = await Deno.open(path, { read: true });
    const open = handle.statSync();
    // Replaced meanwhile: looked up by path, and listed again at the next poll.
    if (!open.isDirectory || open.ino !== info.ino || open.dev !== info.dev) {
      handle.close();
      return { path, time: -2, handle: null };
    }
    return { path, time, handle };
  } catch {
    return { path, time, handle: null };
  }
}

async function folderTime(folder: Folder): Promise<number | null> {
  try {
    const info = folder.handle ? folder.handle.statSync() : await Deno.stat(folder.path);
    return info.mtime?.getTime() ?? null;
  } catch (error) {
    return error instanceof Deno.errors.NotFound ? -1 : null;
  }
}

/** True when a listing may serve again: young enough, and no folder of it changed since. */
async function unchanged(listing: Listing): Promise<boolean> {
  const age = Date.now() - listing.at;
  if (age >= (listing.files.length > 0 ? RELIST_MS : RELIST_EMPTY_MS)) return false;
  const times = await Promise.all(listing.folders.map(folderTime));
  return listing.folders.every((folder, i) =>
    times[i] === folder.time && folder.time < listing.at - FOLDER_SETTLE_MS
  );
}

function closeHandle(cursor: Cursor): void {
  try {
    cursor.handle?.close();
  } catch {
    // Closed already.
  }
  cursor.handle = null;
}

function addStep(index: Map<string, Set<number>>, tag: string, step: number): void {
  const steps = index.get(tag);
  if (steps) steps.add(step);
  else index.set(tag, new Set([step]));
}
