/**
 * What a job's SDK could not deliver before its process ended: the journal it keeps in the
 * run's own folder (`$GPUCTL_RUN_DIR/.gpuctl/<run_id>.jsonl`, the spool format of
 * sdk/python/README.md, with `<run_id>.sent` holding the byte offset it delivered up to).
 * At the attempt's end the agent takes the rest as `sdk` frames, so a job that exits while
 * the agent is away (or faster than it could send) loses nothing and needs no `gpuctl sync`.
 */
import type { z } from "zod";
import type { sdkLogBatch } from "../protocol/rest/sdk.ts";
import { partitionSdkBatch } from "../protocol/sdk_batch.ts";
import type { JobFiles } from "./job_files.ts";

type SdkBatchIn = z.input<typeof sdkLogBatch>;

/** The most of the journal read at once; the SDK's lines are far shorter (a config ≤ 8 MB). */
export const JOURNAL_CHUNK_BYTES = 32 * 1024 * 1024;

/** Part of the journal's undelivered batches, and the offset to record once they are spooled. */
export interface JournalRest {
  batches: SdkBatchIn[];
  /** Byte offset the part starts at. */
  start: number;
  /** Byte offset after the last whole line read. */
  end: number;
  /** True when the part stopped at JOURNAL_CHUNK_BYTES: more may follow from `end`. */
  more: boolean;
  sentPath: string;
}

/**
 * The journal of `runId` in its run's folder, from `from` (default: its delivered offset) on,
 * at most `chunkBytes` of it; null when there is none. The folder is the job's: it is read
 * with the job's rights (`files`), and only as a regular file.
 */
export async function readSdkJournal(
  runDir: string,
  runId: string,
  files: JobFiles,
  from?: number,
  chunkBytes = JOURNAL_CHUNK_BYTES,
): Promise<JournalRest | null> {
  const base = `${runDir}/.gpuctl/${runId}`;
  let offset = from ?? 0;
  if (from === undefined) {
    const sent = await files.read(`${base}.sent`, 64);
    if ("bytes" in sent) {
      offset = Number.parseInt(new TextDecoder().decode(sent.bytes).trim(), 10) || 0;
    }
  }
  offset = Math.max(offset, 0);
  const found = await files.read(`${base}.jsonl`, chunkBytes, offset);
  if (!("bytes" in found)) return null;
  const bytes = found.bytes;
  const decoder = new TextDecoder();
  const batches: SdkBatchIn[] = [];
  let start = 0;
  for (;;) {
    const newline = bytes.indexOf(10, start);
    if (newline < 0) break; // a torn last line (the process died writing it) is left
    const line = decoder.decode(bytes.subarray(start, newline));
    start = newline + 1;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      continue;
    }
    if (
      typeof value !== "object" || value === null || (value as { type?: unknown }).type !== "log"
    ) {
      continue; // the run line
    }
    // The job's end decides a job run's status, not the script's finish().
    const { type: _type, status: _status, ...body } = value as Record<string, unknown>;
    const parts = partitionSdkBatch(body);
    if (parts && Object.keys(parts.raw).length) batches.push(parts.raw as SdkBatchIn);
  }
  return {
    batches,
    start: offset,
    end: offset + start,
    more: bytes.length >= chunkBytes,
    sentPath: `${base}.sent`,
  };
}

/** Records that the journal was taken up to `end`, so nothing of it is sent twice. */
export async function markSdkJournalTaken(rest: JournalRest, files: JobFiles): Promise<void> {
  await files.write(rest.sentPath, `${rest.end}\n`);
}
