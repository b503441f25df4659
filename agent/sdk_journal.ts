/**
 * What a job's SDK could not deliver before its process ended: the journal it keeps in the
 * run's own folder (`$GPUCTL_RUN_DIR/.gpuctl/<run_id>.jsonl`, the spool format of
 * sdk/python/README.md, with `<run_id>.sent` holding the byte offset it delivered up to).
 * At the attempt's end the agent takes the rest as `sdk` frames, so a job that exits while
 * the agent is away (or faster than it could send) loses nothing and needs no `gpuctl sync`.
 */
import type { z } from "zod";
import type { sdkLogBatch } from "../protocol/rest.ts";
import { partitionSdkBatch } from "../protocol/sdk_batch.ts";

type SdkBatchIn = z.input<typeof sdkLogBatch>;

/** The journal's undelivered batches, and the offset to record once they are spooled. */
export interface JournalRest {
  batches: SdkBatchIn[];
  /** Byte offset after the last whole line read. */
  end: number;
  sentPath: string;
}

/** The journal of `runId` in its run's folder, from its delivered offset on; null when none. */
export async function readSdkJournal(runDir: string, runId: string): Promise<JournalRest | null> {
  const base = `${runDir}/.gpuctl/${runId}`;
  let bytes: Uint8Array;
  try {
    bytes = await Deno.readFile(`${base}.jsonl`);
  } catch {
    return null;
  }
  let offset = 0;
  try {
    offset = Number.parseInt((await Deno.readTextFile(`${base}.sent`)).trim(), 10) || 0;
  } catch {
    // nothing delivered yet
  }
  const decoder = new TextDecoder();
  const batches: SdkBatchIn[] = [];
  let start = Math.min(Math.max(offset, 0), bytes.length);
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
  return { batches, end: start, sentPath: `${base}.sent` };
}

/** Records that the journal was taken up to `end`, so nothing of it is sent twice. */
export async function markSdkJournalTaken(rest: JournalRest): Promise<void> {
  await Deno.writeTextFile(rest.sentPath, `${rest.end}\n`);
}
