// Tails the job's raw stdout/stderr files into numbered lines: appends them to output.log,
// saves how far it got in tail.json, then hands them to the agent.
//
// Crash safety. Each poll does, in order: append the new lines to output.log, write
// tail.json (seq, output.log size, the start of each stream's unfinished line), call
// onLine. So after a kill -9 at any point:
//  - before tail.json was written, nothing of the poll was delivered: output.log is cut
//    back to the size tail.json names and the bytes are read again (same lines, same seqs);
//  - after it, the lines are in output.log: those above the caller's last delivered seq are
//    delivered from there, and reading resumes at the saved offsets.

import { LineSplitter } from "./line_splitter.ts";
import { readJsonOrNull, runFile, writeJsonAtomic } from "./run_dir.ts";
import type { OutputLine, RunHooks } from "./types.ts";

/** Lines kept for `ExitInfo.log_tail`. */
export const LOG_TAIL_LINES = 100;
/** Most bytes read from one stream in one poll (the rest waits for the next poll). */
const MAX_READ_BYTES = 4 * 1024 * 1024;

type Stream = OutputLine["stream"];
const STREAMS: readonly Stream[] = ["stdout", "stderr"];

/** Contents of tail.json. */
interface TailFile {
  version: 1;
  /** Seq of the last line written to output.log (and delivered, or about to be). */
  seq: number;
  /** Size of output.log after that line. */
  log_bytes: number;
  /** Per stream: where its first unfinished line starts in the raw file. */
  offsets: Record<Stream, number>;
}

/** Options of {@linkcode OutputTail}. */
export interface OutputTailOptions {
  runDir: string;
  hooks: RunHooks;
  now: () => Date;
  /**
   * True when `dev` (a `st_dev`) is a local file system: a raw file found there stays open
   * between polls, and a poll takes its size with a seek and reads it in place, without
   * looking up its path again. @default none is: each poll looks the files up by path
   */
  localDevice?: (dev: number) => boolean;
}

/** Reads a run dir's raw output files and delivers their lines exactly once. */
export class OutputTail {
  readonly #runDir: string;
  readonly #hooks: RunHooks;
  readonly #now: () => Date;
  readonly #splitters: Record<Stream, LineSplitter>;
  #seq: number;
  #logBytes: number;
  readonly #recent: string[];
  readonly #encoder = new TextEncoder();
  #muted = false;
  readonly #localDevice: ((dev: number) => boolean) | null;
  /** Each raw file kept open (see `localDevice`); null: read by path; absent: not yet opened. */
  readonly #open = new Map<Stream, Deno.FsFile | null>();

  private constructor(options: OutputTailOptions, file: TailFile, recent: string[]) {
    this.#runDir = options.runDir;
    this.#hooks = options.hooks;
    this.#now = options.now;
    this.#localDevice = options.localDevice ?? null;
    this.#seq = file.seq;
    this.#logBytes = file.log_bytes;
    this.#splitters = {
      stdout: new LineSplitter(file.offsets.stdout),
      stderr: new LineSplitter(file.offsets.stderr),
    };
    this.#recent = recent;
  }

  /** A fresh attempt: creates empty raw files, output.log and tail.json. */
  static async create(options: OutputTailOptions): Promise<OutputTail> {
    const file: TailFile = { version: 1, seq: 0, log_bytes: 0, offsets: { stdout: 0, stderr: 0 } };
    for (const name of ["stdout", "stderr", "outputLog"] as const) {
      await Deno.writeFile(runFile(options.runDir, name), new Uint8Array());
    }
    await writeJsonAtomic(runFile(options.runDir, "tail"), file);
    return new OutputTail(options, file, []);
  }

  /**
   * Resumes after an agent restart: delivers the lines of output.log above
   * `lastDeliveredSeq`, then continues from where the raw files were last read.
   */
  static async resume(options: OutputTailOptions, lastDeliveredSeq: number): Promise<OutputTail> {
    const file = parseTailFile(await readJsonOrNull(runFile(options.runDir, "tail")));
    const logPath = runFile(options.runDir, "outputLog");
    const size = fileSize(logPath);
    if (size > file.log_bytes) await Deno.truncate(logPath, file.log_bytes);
    else if (size < file.log_bytes) file.log_bytes = size;
    const lines = await readLastLogLines(
      logPath,
      file.log_bytes,
      (found) => found.length >= LOG_TAIL_LINES && found[0].seq <= lastDeliveredSeq,
    );
    // Lines delivered again below join the recent ones as they are delivered.
    const recent = lines.filter((line) => line.seq <= lastDeliveredSeq).slice(-LOG_TAIL_LINES)
      .map((line) => line.text);
    const tail = new OutputTail(options, file, recent);
    for (const line of lines) {
      if (line.seq > lastDeliveredSeq) tail.#deliver(line);
    }
    return tail;
  }

  /**
   * Stops calling `onLine` (the handle was detached); a poll already running still records
   * its lines in output.log, from where a reattach delivers them.
   */
  mute(): void {
    this.#muted = true;
  }

  /** Closes the raw files kept open; a later poll opens them again. */
  close(): void {
    for (const file of this.#open.values()) file?.close();
    this.#open.clear();
  }

  /** Seq of the last line delivered. */
  get seq(): number {
    return this.#seq;
  }

  /** The last lines (at most 100), oldest first. */
  recentLines(): string[] {
    return [...this.#recent];
  }

  /**
   * Reads what the raw files gained and delivers the complete lines. With `final` (the
   * job has ended) it reads to the end and also delivers unfinished last lines.
   */
  async poll(final: boolean): Promise<number> {
    const before = STREAMS.map((s) => this.#splitters[s].offset);
    const read: { stream: Stream; texts: string[] }[] = [];
    for (const stream of STREAMS) {
      const splitter = this.#splitters[stream];
      const path = runFile(this.#runDir, stream);
      const texts: string[] = [];
      for (;;) {
        const open = this.#openFile(stream, path);
        const chunk = open
          ? readInPlace(open, splitter.position, MAX_READ_BYTES)
          : await readFrom(path, splitter.position, MAX_READ_BYTES);
        // Most polls of a quiet job read nothing: nothing to split then.
        if (chunk.length > 0) texts.push(...splitter.push(chunk));
        if (final && chunk.length < MAX_READ_BYTES) texts.push(...splitter.flush());
        if (!final || chunk.length < MAX_READ_BYTES) break;
      }
      read.push({ stream, texts });
    }
    // The two files keep no order between them. When both gained lines, the stream whose last
    // write came first goes first: a traceback on stderr then a final flush of stdout stays in
    // that order, as do progress lines on stdout then the error. On a tie (one tick of the
    // file system's clock) stdout goes first. Looked up only then: a stat per poll is not free.
    if (read.every((r) => r.texts.length > 0)) {
      const writtenAt = new Map(
        read.map((r) => [r.stream, modifiedAt(runFile(this.#runDir, r.stream))]),
      );
      read.sort((a, b) => writtenAt.get(a.stream)! - writtenAt.get(b.stream)!);
    }
    // Read only for lines: most polls of a quiet job find none.
    const ts = read.some((r) => r.texts.length > 0) ? this.#now().toISOString() : "";
    const batch: OutputLine[] = [];
    for (const { stream, texts } of read) {
      for (const text of texts) {
        batch.push({ seq: this.#seq + batch.length + 1, ts, stream, text });
      }
    }
    const moved = STREAMS.some((s, i) => this.#splitters[s].offset !== before[i]);
    if (batch.length === 0 && !moved) return 0;

    if (batch.length > 0) {
      const bytes = this.#encoder.encode(batch.map((line) => JSON.stringify(line) + "\n").join(""));
      await Deno.writeFile(runFile(this.#runDir, "outputLog"), bytes, { append: true });
      this.#logBytes += bytes.length;
      this.#seq += batch.length;
    }
    const file: TailFile = {
      version: 1,
      seq: this.#seq,
      log_bytes: this.#logBytes,
      offsets: { stdout: this.#splitters.stdout.offset, stderr: this.#splitters.stderr.offset },
    };
    await writeJsonAtomic(runFile(this.#runDir, "tail"), file);
    for (const line of batch) this.#deliver(line);
    return batch.length;
  }

  /** The raw file of `stream`, open, when it is on a local disk (see `localDevice`). */
  #openFile(stream: Stream, path: string): Deno.FsFile | null {
    if (this.#localDevice === null) return null;
    const known = this.#open.get(stream);
    if (known !== undefined) return known;
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(path, { read: true });
    } catch {
      return null; // not there yet: looked for again at the next poll
    }
    let local = false;
    try {
      local = this.#localDevice(file.statSync().dev);
    } finally {
      if (!local) file.close();
    }
    this.#open.set(stream, local ? file : null);
    return local ? file : null;
  }

  #deliver(line: OutputLine): void {
    this.#recent.push(line.text);
    if (this.#recent.length > LOG_TAIL_LINES) this.#recent.shift();
    if (this.#muted) return;
    try {
      this.#hooks.onLine(line);
    } catch {
      // The agent's hook failing must not stop the tail; the line stays in output.log.
    }
  }
}

function parseTailFile(value: unknown): TailFile {
  const empty: TailFile = { version: 1, seq: 0, log_bytes: 0, offsets: { stdout: 0, stderr: 0 } };
  if (typeof value !== "object" || value === null) return empty;
  const v = value as Partial<TailFile>;
  const offsets = v.offsets ?? { stdout: 0, stderr: 0 };
  const ok = [v.seq, v.log_bytes, offsets.stdout, offsets.stderr].every((n) =>
    Number.isSafeInteger(n) && (n as number) >= 0
  );
  return ok ? { version: 1, seq: v.seq!, log_bytes: v.log_bytes!, offsets } : empty;
}

// A synchronous stat: a local file answers in microseconds, and an asynchronous one costs
// several times the CPU in thread hand-offs, paid by every attempt several times a second.
function fileSize(path: string): number {
  try {
    return Deno.statSync(path).size;
  } catch {
    return 0;
  }
}

/** When `path` was last written, in ms since the epoch; 0 when there is no such file. */
function modifiedAt(path: string): number {
  try {
    return Deno.statSync(path).mtime?.getTime() ?? 0;
  } catch {
    return 0;
  }
}

/** What a read of a file that did not grow returns (never written to). */
const NOTHING = new Uint8Array(0);

/**
 * Up to `max` bytes of an open file from `offset`; empty when there are none. Its size comes
 * from a seek to its end: a stat of an open file has Deno resolve its path again (a `readlink`
 * per folder, to check the permission), a seek does not.
 */
function readInPlace(file: Deno.FsFile, offset: number, max: number): Uint8Array {
  const size = file.seekSync(0, Deno.SeekMode.End);
  if (size <= offset) return NOTHING;
  file.seekSync(offset, Deno.SeekMode.Start);
  const buffer = new Uint8Array(Math.min(max, size - offset));
  let filled = 0;
  while (filled < buffer.length) {
    const n = file.readSync(buffer.subarray(filled));
    if (n === null || n === 0) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}

/** Up to `max` bytes of `path` from `offset`; empty when there are none or no file. */
async function readFrom(path: string, offset: number, max: number): Promise<Uint8Array> {
  if (fileSize(path) <= offset) return new Uint8Array();
  using file = await Deno.open(path, { read: true });
  await file.seek(offset, Deno.SeekMode.Start);
  const buffer = new Uint8Array(max);
  let filled = 0;
  while (filled < max) {
    const n = await file.read(buffer.subarray(filled));
    if (n === null || n === 0) break;
    filled += n;
  }
  return buffer.subarray(0, filled);
}

/**
 * The last lines of output.log (within its first `size` bytes), read backwards in growing
 * chunks until `enough(lines)` holds or the file's start is reached.
 */
export async function readLastLogLines(
  path: string,
  size: number,
  enough: (lines: OutputLine[]) => boolean,
): Promise<OutputLine[]> {
  if (size === 0) return [];
  using file = await Deno.open(path, { read: true });
  let chunk = 256 * 1024;
  for (;;) {
    const start = Math.max(0, size - chunk);
    await file.seek(start, Deno.SeekMode.Start);
    const buffer = new Uint8Array(size - start);
    let filled = 0;
    while (filled < buffer.length) {
      const n = await file.read(buffer.subarray(filled));
      if (n === null || n === 0) break;
      filled += n;
    }
    const rows = new TextDecoder().decode(buffer.subarray(0, filled)).split("\n");
    if (start > 0) rows.shift(); // begins mid-record
    const lines: OutputLine[] = [];
    for (const row of rows) {
      if (row === "") continue;
      try {
        lines.push(JSON.parse(row) as OutputLine);
      } catch {
        // A torn record cannot be delivered; skip it.
      }
    }
    if (start === 0 || (lines.length > 0 && enough(lines))) return lines;
    chunk *= 4;
  }
}
