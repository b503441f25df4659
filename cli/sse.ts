// Server-Sent Events for the CLI (and the tests' client): `eventsource-parser` splits the
// byte stream into messages; `followSse` keeps a stream going across disconnects and server
// restarts by reconnecting with Last-Event-ID, so the server replays exactly what was missed.

import { createParser } from "eventsource-parser";
import { ApiError, ConnectionError, type GpuctlClient } from "./client.ts";

/** One message: `id:` and `event:` when the server sent them, and the joined `data:` lines. */
export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

/** The messages of one SSE response body, as they arrive; comments go to `onComment`. */
export async function* readSse(
  body: ReadableStream<Uint8Array>,
  onComment?: (comment: string) => void,
): AsyncGenerator<SseMessage> {
  const ready: SseMessage[] = [];
  const parser = createParser({
    onEvent: (m) => ready.push({ id: m.id, event: m.event, data: m.data }),
    onComment: (c) => onComment?.(c.trim()),
  });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(decoder.decode(chunk, { stream: true }));
    while (ready.length) yield ready.shift()!;
  }
}

/** How `followSse` resumes a stream. */
export interface FollowOptions {
  /** Resume after this id (sent as Last-Event-ID); none: where the server starts a stream. */
  lastEventId?: string;
  /** Stops following (the generator returns). */
  signal?: AbortSignal;
  /** Told once per outage, when a connection is lost or cannot be made, and why. */
  onDisconnect?: (reason: string) => void;
  /** Told when a stream is open again after an outage. */
  onReconnect?: () => void;
  /** Bytes (data or keep-alive) must arrive this often, or the connection counts as lost. @default 45000 */
  idleMs?: number;
  /** The longest wait between two tries. @default 5000 */
  maxBackoffMs?: number;
}

const FIRST_BACKOFF_MS = 250;

// Statuses worth trying again: the server restarting, or too many streams for the moment.
function retryable(err: unknown): boolean {
  if (err instanceof ConnectionError) return true;
  return err instanceof ApiError && (err.status >= 500 || err.status === 429);
}

/**
 * Follows `path` until the server sends `event: end` (yielded, then the generator returns)
 * or the signal aborts. A dropped or refused connection is tried again with backoff, resuming
 * after the last id seen; an answer that will not change (401, 403, 404) is thrown.
 */
export async function* followSse(
  client: GpuctlClient,
  path: string,
  options: FollowOptions = {},
): AsyncGenerator<SseMessage> {
  let lastEventId = options.lastEventId;
  let backoff = FIRST_BACKOFF_MS;
  let outage = false;
  const idleMs = options.idleMs ?? 45_000;
  while (!options.signal?.aborted) {
    const abort = new AbortController();
    const onAbort = () => abort.abort();
    options.signal?.addEventListener("abort", onAbort);
    let idle: ReturnType<typeof setTimeout> | undefined;
    const touch = () => {
      clearTimeout(idle);
      idle = setTimeout(() => abort.abort(new Error(`no data for ${idleMs / 1000} s`)), idleMs);
    };
    let reason: string;
    try {
      touch();
      const res = await client.openStream(path, { lastEventId, signal: abort.signal });
      if (outage) options.onReconnect?.();
      outage = false;
      backoff = FIRST_BACKOFF_MS;
      const body = res.body!.pipeThrough(
        new TransformStream<Uint8Array, Uint8Array>({
          transform(chunk, c) {
            touch();
            c.enqueue(chunk);
          },
        }),
      );
      for await (const m of readSse(body)) {
        if (m.id !== undefined) lastEventId = m.id;
        yield m;
        if (m.event === "end") return;
      }
      reason = "the server closed the stream";
    } catch (err) {
      if (options.signal?.aborted) return;
      if (!retryable(err) && !abort.signal.aborted && !isStreamError(err)) throw err;
      reason = abort.signal.aborted
        ? String(abort.signal.reason?.message ?? "timed out")
        : (err as Error).message;
    } finally {
      clearTimeout(idle);
      options.signal?.removeEventListener("abort", onAbort);
      abort.abort();
    }
    if (!outage) options.onDisconnect?.(reason);
    outage = true;
    await sleep(backoff, options.signal);
    backoff = Math.min(backoff * 2, options.maxBackoffMs ?? 5000);
  }
}

// A body that broke off mid-read (the server went away): try again.
function isStreamError(err: unknown): boolean {
  return err instanceof TypeError || (err as Error)?.name === "Interrupted" ||
    (err as Error)?.name === "ConnectionReset" || (err as Error)?.name === "BadResource" ||
    err instanceof Deno.errors.ConnectionReset || err instanceof Deno.errors.Interrupted;
}

/** Waits `ms`, or less when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done);
  });
}
