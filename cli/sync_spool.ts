// Replaying the SDK's spool: each `$GPUCTL_HOME/spool/<run id>.jsonl` is registered and its
// batches sent in order; a file sent whole moves to `spool/synced/`. Both requests are
// idempotent on the server (fixed run id; one point per key and step; one checkpoint per
// path), so a replay that stops half-way, or runs twice, adds nothing twice.

import { basename, join } from "node:path";
import type { Accepted } from "./client.ts";
import { parseSpoolFile } from "./spool_file.ts";

/** A spool file changed this recently may still be written by a live training process. */
export const LIVE_WINDOW_MS = 5000;
/** Where synced files go, inside the spool folder. */
export const SYNCED_FOLDER = "synced";

/** The two calls a replay makes; `GpuctlClient` is one. */
export interface SyncClient {
  registerSdkRun(body: Record<string, unknown>): Promise<unknown>;
  logBatch(runId: string, body: Record<string, unknown>): Promise<Accepted>;
}

/** What happened to one spool file. */
export type SyncResult =
  | {
    file: string;
    status: "synced";
    run_id: string;
    batches: number;
    points: number;
    checkpoints: number;
    /** The file's new path under `synced/`. */
    moved_to: string;
    torn_last_line: boolean;
    /** False for a file of log lines only, whose run the server already had. */
    registered: boolean;
    /** What had to be changed for the server to take it (an oversized config cut). */
    warnings: string[];
  }
  | { file: string; status: "skipped"; reason: string }
  | { file: string; status: "failed"; run_id: string | null; error: string };

/** Options of `syncSpool`. */
export interface SyncOptions {
  /** `$GPUCTL_HOME/spool`. */
  spoolDir: string;
  /** Send files changed within LIVE_WINDOW_MS too. @default false */
  force?: boolean;
  /** The clock, Unix ms. */
  now: () => number;
  /** Called with each file's result as soon as it is known. */
  onResult?: (result: SyncResult) => void;
}

/** Replays every spool file in name order; resolves to one result per file. */
export async function syncSpool(client: SyncClient, options: SyncOptions): Promise<SyncResult[]> {
  const results: SyncResult[] = [];
  for (const file of await listSpoolFiles(options.spoolDir)) {
    const result = await syncFile(client, file, options);
    options.onResult?.(result);
    results.push(result);
  }
  return results;
}

/** The `*.jsonl` files directly in `spoolDir` (not `synced/`), by name; none if it is missing. */
export async function listSpoolFiles(spoolDir: string): Promise<string[]> {
  const files: string[] = [];
  try {
    for await (const e of Deno.readDir(spoolDir)) {
      if (e.isFile && e.name.endsWith(".jsonl") && !e.name.startsWith(".")) {
        files.push(join(spoolDir, e.name));
      }
    }
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return [];
    throw new Error(`Cannot read the spool folder "${spoolDir}": ${(err as Error).message}`, {
      cause: err,
    });
  }
  return files.sort();
}

async function syncFile(client: SyncClient, path: string, options: SyncOptions) {
  const file = basename(path);
  const fallbackId = file.slice(0, -".jsonl".length);
  let runId: string | null = null;
  try {
    const info = await Deno.stat(path);
    const age = options.now() - (info.mtime?.getTime() ?? 0);
    if (!options.force && age < LIVE_WINDOW_MS) {
      return {
        file,
        status: "skipped",
        reason: `changed ${(Math.max(age, 0) / 1000).toFixed(1)} s ago, so a training ` +
          "process may still be writing it: run sync again later, or pass --force",
      } satisfies SyncResult;
    }
    const sentPath = `${path.slice(0, -".jsonl".length)}.sent`;
    const spool = parseSpoolFile(await unsentText(path, sentPath), fallbackId);
    runId = spool.runId;
    const warnings = spool.refused.slice(0, 10).map((r) =>
      `line ${r.line}: ${r.path} ${r.message}; left out`
    );
    if (spool.registration) {
      await client.registerSdkRun(cutConfig(spool.registration, "the run line", warnings));
    }
    let points = 0;
    let checkpoints = 0;
    for (const [i, batch] of spool.batches.entries()) {
      try {
        await client.logBatch(spool.runId, cutConfig(batch, `batch ${i + 1}`, warnings));
      } catch (err) {
        throw new Error(
          `batch ${i + 1} of ${spool.batches.length} failed: ${(err as Error).message}`,
          { cause: err },
        );
      }
      points += Array.isArray(batch.points) ? batch.points.length : 0;
      checkpoints += Array.isArray(batch.checkpoints) ? batch.checkpoints.length : 0;
    }
    const movedTo = await moveToSynced(path, options.spoolDir);
    await Deno.remove(sentPath).catch(() => {});
    return {
      file,
      status: "synced",
      run_id: spool.runId,
      batches: spool.batches.length,
      points,
      checkpoints,
      moved_to: movedTo,
      torn_last_line: spool.tornLastLine,
      registered: spool.registration !== null,
      warnings,
    } satisfies SyncResult;
  } catch (err) {
    return {
      file,
      status: "failed",
      run_id: runId,
      error: (err as Error).message,
    } satisfies SyncResult;
  }
}

/** The largest config sent, encoded: the server takes request bodies up to 10 MB. */
export const MAX_CONFIG_BYTES = 8 * 1024 * 1024;

/**
 * The file's text without the log lines the SDK already delivered itself: `<stem>.sent`
 * holds the byte offset up to which it did. The run line is always kept (registering again
 * is harmless), so a file the SDK half sent is finished here and nothing is sent twice.
 */
async function unsentText(path: string, sentPath: string): Promise<string> {
  const bytes = await Deno.readFile(path);
  let offset = 0;
  try {
    offset = Number.parseInt((await Deno.readTextFile(sentPath)).trim(), 10) || 0;
  } catch {
    // no offset file: nothing was delivered
  }
  const firstLineEnd = bytes.indexOf(10) + 1;
  const decoder = new TextDecoder();
  if (offset <= firstLineEnd || firstLineEnd === 0) return decoder.decode(bytes);
  return decoder.decode(bytes.subarray(0, firstLineEnd)) +
    decoder.decode(bytes.subarray(Math.min(offset, bytes.length)));
}

/**
 * A body whose config would make the request too large gets a note instead (never a reason
 * for the rest of the run to stay off the server, nor for sync to fail on this file forever).
 */
function cutConfig(
  body: Record<string, unknown>,
  where: string,
  warnings: string[],
): Record<string, unknown> {
  if (body.config === undefined) return body;
  const size = new TextEncoder().encode(JSON.stringify(body.config)).length;
  if (size <= MAX_CONFIG_BYTES) return body;
  warnings.push(`${where}: its config of ${size} bytes is over ${MAX_CONFIG_BYTES} and was cut`);
  return { ...body, config: { gpuctl_config_cut: `a config of ${size} bytes was left out` } };
}

// `synced/<name>`, or `synced/<stem>.<n>.jsonl` when a file of that name was synced before
// (the same run spooled again later).
async function moveToSynced(path: string, spoolDir: string): Promise<string> {
  const dir = join(spoolDir, SYNCED_FOLDER);
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const name = basename(path);
  const stem = name.slice(0, -".jsonl".length);
  for (let n = 1;; n++) {
    const target = join(dir, n === 1 ? name : `${stem}.${n}.jsonl`);
    try {
      await Deno.lstat(target);
      continue;
    } catch (err) {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    }
    await Deno.rename(path, target);
    return target;
  }
}
