/**
 * The agent's spool: every data frame is numbered and appended here BEFORE it is sent, and
 * stays until the server acknowledges it, so a dropped connection or an agent restart loses
 * nothing (DESIGN "Processes and wires").
 *
 * Layout: `<dir>/<stream>/<first seq, 16 digits>.jsonl`, one frame per line. Each stream
 * appends to its newest segment and starts a new one past `segmentBytes`; an ack deletes the
 * segments it fully covers. A segment file's name records where its numbering starts, so an
 * empty newest segment keeps the next seq across restarts even when everything was acked.
 * A crash can leave a torn last line: it is cut off when the spool opens.
 */
import { type StreamName, STREAMS } from "../protocol/agent.ts";
import type { NewDataFrame, WireDataFrame } from "./frames.ts";
import { type Logger, silentLogger } from "./log.ts";

/** Largest segment file: small enough to drop a slice of system metrics at a time. */
export const MAX_SEGMENT_BYTES = 8 * 1024 * 1024;
const SEGMENT_NAME = /^(\d{1,20})\.jsonl$/;

/** Options of {@linkcode Spool.open}; every field is optional. */
export interface SpoolOptions {
  /** Total size cap; `sys` frames are dropped (oldest first) to stay under it. @default 512 MiB */
  maxBytes?: number;
  /** Size past which a stream starts a new segment. @default min(8 MiB, maxBytes / 16) */
  segmentBytes?: number;
  log?: Logger;
}

/** Counters, for heartbeats, logs and tests. */
export interface SpoolStats {
  bytes: number;
  /** Sys frames dropped because the spool was full, since it opened. */
  droppedSys: number;
  streams: Record<StreamName, { newest: number; acked: number; segments: number; bytes: number }>;
}

interface Segment {
  first: number;
  count: number;
  bytes: number;
  path: string;
}

interface StreamState {
  dir: string;
  segments: Segment[];
  /** Open handle on the newest segment, opened on first append. */
  file: Deno.FsFile | null;
  /** The seq the next frame gets. */
  next: number;
  /** Highest seq the server acknowledged in this process's life. */
  acked: number;
}

const encoder = new TextEncoder();

/** A per-stream, numbered, append-only store of un-acknowledged frames. */
export class Spool {
  readonly dir: string;
  readonly maxBytes: number;
  readonly segmentBytes: number;
  #log: Logger;
  #streams: Record<StreamName, StreamState>;
  #chain: Promise<unknown> = Promise.resolve();
  #listeners: ((frame: WireDataFrame) => void)[] = [];
  #droppedSys = 0;
  #warnedFull = false;
  #closed = false;

  private constructor(
    dir: string,
    options: SpoolOptions,
    streams: Record<StreamName, StreamState>,
  ) {
    this.dir = dir;
    this.maxBytes = options.maxBytes ?? 512 * 1024 * 1024;
    this.segmentBytes = options.segmentBytes ??
      Math.max(4096, Math.min(MAX_SEGMENT_BYTES, Math.floor(this.maxBytes / 16)));
    this.#log = options.log ?? silentLogger;
    this.#streams = streams;
  }

  /** Opens (creating) the spool in `dir`, recovering numbering and cutting torn last lines. */
  static async open(dir: string, options: SpoolOptions = {}): Promise<Spool> {
    const streams = {} as Record<StreamName, StreamState>;
    for (const stream of STREAMS) {
      streams[stream] = await recoverStream(`${dir}/${stream}`, options.log ?? silentLogger);
    }
    return new Spool(dir, options, streams);
  }

  /** Called after each frame is written, in seq order (the connection sends it from here). */
  onAppend(listener: (frame: WireDataFrame) => void): void {
    this.#listeners.push(listener);
  }

  /**
   * Numbers `frame` and appends it. Resolves with the numbered frame once written, or null
   * when it was a `sys` frame dropped because the spool is full.
   */
  append(frame: NewDataFrame): Promise<WireDataFrame | null> {
    return this.#serial(() => this.#append(frame));
  }

  /** The server stored everything of `stream` up to `seq`: delete what that covers. */
  ack(stream: StreamName, seq: number): Promise<void> {
    return this.#serial(() => this.#trim(stream, seq));
  }

  /**
   * The server's cursor is above anything numbered here (this spool was lost or is new):
   * renumber the frames still held to follow `ack`, and continue from there, so the server
   * does not skip them as duplicates.
   */
  rebase(stream: StreamName, ack: number): Promise<void> {
    return this.#serial(() => this.#rebase(stream, ack));
  }

  /** The newest seq given out on `stream` (0 when none). */
  newest(stream: StreamName): number {
    return this.#streams[stream].next - 1;
  }

  /**
   * Frames of `stream` with `after < seq ≤ upTo`, where `upTo` is the newest seq when the
   * call starts, at most `limit` of them. `upTo` is lowered to the last frame returned when
   * the limit cut the list; frames in between that were dropped are simply absent.
   */
  async readAfter(
    stream: StreamName,
    after: number,
    limit = Infinity,
  ): Promise<{ frames: WireDataFrame[]; upTo: number }> {
    const state = this.#streams[stream];
    const upTo = state.next - 1;
    const segments = state.segments.slice();
    const frames: WireDataFrame[] = [];
    for (let i = 0; i < segments.length; i++) {
      const last = i + 1 < segments.length ? segments[i + 1].first - 1 : upTo;
      if (last <= after || segments[i].first > upTo) continue;
      let text: string;
      try {
        text = await Deno.readTextFile(segments[i].path);
      } catch (err) {
        // Trimmed or dropped since the snapshot: nothing the caller still needs.
        if (err instanceof Deno.errors.NotFound) continue;
        throw err;
      }
      for (const frame of parseLines(text)) {
        if (frame.seq <= after || frame.seq > upTo) continue;
        frames.push(frame);
        if (frames.length >= limit) return { frames, upTo: frame.seq };
      }
    }
    return { frames, upTo };
  }

  stats(): SpoolStats {
    const streams = {} as SpoolStats["streams"];
    let bytes = 0;
    for (const stream of STREAMS) {
      const s = this.#streams[stream];
      const streamBytes = s.segments.reduce((sum, seg) => sum + seg.bytes, 0);
      bytes += streamBytes;
      streams[stream] = {
        newest: s.next - 1,
        acked: s.acked,
        segments: s.segments.length,
        bytes: streamBytes,
      };
    }
    return { bytes, droppedSys: this.#droppedSys, streams };
  }

  /** Waits for pending writes and closes the files; idempotent. */
  async close(): Promise<void> {
    await this.#serial(() => {
      for (const stream of STREAMS) {
        this.#streams[stream].file?.close();
        this.#streams[stream].file = null;
      }
      this.#closed = true;
    });
  }

  #serial<T>(task: () => T | Promise<T>): Promise<T> {
    const next = this.#chain.then(task, task);
    this.#chain = next.catch(() => {});
    return next;
  }

  async #append(frame: NewDataFrame): Promise<WireDataFrame | null> {
    if (this.#closed) throw new Error(`Cannot append a ${frame.type} frame: the spool is closed`);
    const state = this.#streams[frame.stream];
    const numbered = { ...frame, seq: state.next } as WireDataFrame;
    const bytes = encoder.encode(JSON.stringify(numbered) + "\n");
    if (this.#totalBytes() + bytes.length > this.maxBytes) {
      await this.#dropSys(this.#totalBytes() + bytes.length - this.maxBytes);
      if (this.#totalBytes() + bytes.length > this.maxBytes) {
        if (frame.stream === "sys") {
          this.#droppedSys++;
          return null;
        }
        if (!this.#warnedFull) {
          this.#warnedFull = true;
          this.#log.warn("spool is over its cap with job data alone; keeping it", {
            bytes: this.#totalBytes(),
            max_bytes: this.maxBytes,
          });
        }
      }
    }
    let segment = state.segments.at(-1);
    if (!segment || (segment.count > 0 && segment.bytes + bytes.length > this.segmentBytes)) {
      segment = await this.#roll(state);
    }
    state.file ??= await Deno.open(segment.path, { append: true, create: true });
    writeAll(state.file, bytes);
    segment.count++;
    segment.bytes += bytes.length;
    state.next++;
    if (this.#warnedFull && this.#totalBytes() < this.maxBytes / 2) this.#warnedFull = false;
    for (const listener of this.#listeners) listener(numbered);
    return numbered;
  }

  /** Starts an empty newest segment numbered from `state.next`. */
  async #roll(state: StreamState): Promise<Segment> {
    state.file?.close();
    state.file = null;
    await Deno.mkdir(state.dir, { recursive: true });
    const segment: Segment = {
      first: state.next,
      count: 0,
      bytes: 0,
      path: `${state.dir}/${segmentName(state.next)}`,
    };
    state.file = await Deno.open(segment.path, { append: true, create: true });
    state.segments.push(segment);
    return segment;
  }

  async #trim(stream: StreamName, seq: number): Promise<void> {
    const state = this.#streams[stream];
    if (seq > state.acked) state.acked = seq;
    while (state.segments.length > 1 && state.segments[1].first - 1 <= state.acked) {
      await removeQuietly(state.segments.shift()!.path);
    }
    // The newest segment is kept while it grows; once fully acked and big, it is replaced.
    const newest = state.segments.at(-1);
    if (
      newest && newest.count > 0 && state.next - 1 <= state.acked &&
      newest.bytes >= this.segmentBytes / 4
    ) {
      await this.#roll(state);
      state.segments.shift();
      await removeQuietly(newest.path);
    }
  }

  /** Deletes the oldest sys segments until `needed` bytes are freed or none is left. */
  async #dropSys(needed: number): Promise<void> {
    const state = this.#streams.sys;
    let freed = 0;
    while (freed < needed) {
      const oldest = state.segments[0];
      if (!oldest || oldest.count === 0) return;
      if (state.segments.length === 1) await this.#roll(state);
      state.segments.shift();
      await removeQuietly(oldest.path);
      freed += oldest.bytes;
      this.#droppedSys += oldest.count;
    }
  }

  async #rebase(stream: StreamName, ack: number): Promise<void> {
    const state = this.#streams[stream];
    if (ack < state.next) return;
    const { frames } = await this.readAfter(stream, state.acked);
    const renumbered = frames.map((frame, i) => ({ ...frame, seq: ack + 1 + i }));
    await Deno.mkdir(state.dir, { recursive: true });
    const path = `${state.dir}/${segmentName(ack + 1)}`;
    const text = renumbered.map((frame) => JSON.stringify(frame) + "\n").join("");
    // Written aside and renamed: a crash leaves either the old segments or the new one
    // (plus old ones whose seqs the server already has, which it skips).
    await Deno.writeTextFile(`${path}.tmp`, text);
    await Deno.rename(`${path}.tmp`, path);
    state.file?.close();
    state.file = null;
    for (const segment of state.segments) {
      if (segment.path !== path) await removeQuietly(segment.path);
    }
    state.segments = [{
      first: ack + 1,
      count: renumbered.length,
      bytes: encoder.encode(text).length,
      path,
    }];
    state.next = ack + 1 + renumbered.length;
    state.acked = ack;
    this.#log.info("spool renumbered after the server's cursor", {
      stream,
      server_seq: ack,
      frames: renumbered.length,
    });
  }

  #totalBytes(): number {
    let total = 0;
    for (const stream of STREAMS) {
      for (const segment of this.#streams[stream].segments) total += segment.bytes;
    }
    return total;
  }
}

async function recoverStream(dir: string, log: Logger): Promise<StreamState> {
  const segments: Segment[] = [];
  try {
    for await (const entry of Deno.readDir(dir)) {
      const match = entry.isFile ? SEGMENT_NAME.exec(entry.name) : null;
      if (!match) continue;
      const path = `${dir}/${entry.name}`;
      const { size } = await Deno.stat(path);
      segments.push({ first: Number(match[1]), count: 0, bytes: size, path });
    }
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  segments.sort((a, b) => a.first - b.first);
  for (let i = 0; i + 1 < segments.length; i++) {
    segments[i].count = segments[i + 1].first - segments[i].first;
  }
  const newest = segments.at(-1);
  let next = 1;
  if (newest) {
    const bytes = await Deno.readFile(newest.path);
    const end = bytes.lastIndexOf(0x0a) + 1;
    if (end < bytes.length) {
      // A write cut short by a crash: the frame was never acknowledged, nor sent whole.
      log.warn("spool: dropping a torn last line", {
        path: newest.path,
        bytes: bytes.length - end,
      });
      await Deno.truncate(newest.path, end);
      newest.bytes = end;
    }
    const frames = parseLines(new TextDecoder().decode(bytes.subarray(0, end)));
    newest.count = frames.length;
    next = Math.max(newest.first, (frames.at(-1)?.seq ?? 0) + 1);
  }
  return { dir, segments, file: null, next, acked: 0 };
}

/** The frames of a segment's text; lines that are not numbered frames are skipped. */
function parseLines(text: string): WireDataFrame[] {
  const frames: WireDataFrame[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    try {
      const frame = JSON.parse(line);
      if (typeof frame?.seq === "number") frames.push(frame);
    } catch {
      // A torn line (only possible at the end of the newest segment, while it is written).
    }
  }
  return frames;
}

function segmentName(first: number): string {
  return `${String(first).padStart(16, "0")}.jsonl`;
}

/**
 * Written synchronously: the spool lies in the agent's own data dir, and a frame is a few
 * KB, while an asynchronous write costs several times the CPU in thread hand-offs, for every
 * frame the agent sends.
 */
function writeAll(file: Deno.FsFile, bytes: Uint8Array): void {
  let written = 0;
  while (written < bytes.length) written += file.writeSync(bytes.subarray(written));
}

async function removeQuietly(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
}
