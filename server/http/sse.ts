/**
 * Server-Sent Events with resume, bounded buffers and a bounded number of streams. A stream
 * first replays what the client missed from the store (in pages, as fast as the client
 * reads), then switches to live messages from the bus. A client that stops reading is
 * dropped once its unsent data passes `maxBufferedBytes`, so it cannot make the server's
 * memory grow; its EventSource reconnects with Last-Event-ID and catches up from the store.
 * Each open stream holds a slot of `SseStreams` (per token and in total) until it closes,
 * and a stream of something that has ended (a finished run) sends `event: end` and closes.
 */
import { HttpError } from "./errors.ts";
import { SSE_MAX_STREAMS, SSE_MAX_STREAMS_PER_TOKEN } from "../config.ts";
import type { Context } from "../context.ts";
import type { Feed, FeedMessage } from "../bus/feed.ts";
import { principalOf, type RequestContext } from "./route.ts";

/** One SSE message; `id` is what a client sends back as Last-Event-ID. */
export type SseMessage = FeedMessage;

/** What a stream serves: a feed (its `lastId` is not used; the options' `startId` is). */
export type SseSource = Omit<Feed, "lastId">;

export type SseCloseReason = "client" | "slow" | "error" | "end" | "shutdown";

export interface SseOptions {
  /** Where to start when the client names no id. */
  startId: number;
  /** @default 15_000 */
  keepAliveMs?: number;
  /** @default SSE_MAX_BUFFERED_BYTES */
  maxBufferedBytes?: number;
  /** @default 500 */
  pageSize?: number;
  /** The slots the stream is counted in, and whose (a token id). */
  streams: SseStreams;
  owner: string;
  /** Called once when the stream ends, with why. */
  onClose?: (reason: SseCloseReason) => void;
}

/** Default bound on a subscriber's unsent bytes before it is dropped. */
export const SSE_MAX_BUFFERED_BYTES = 256 * 1024;
/** Default interval of keep-alive comments. */
export const SSE_KEEPALIVE_MS = 15_000;

/** Counts open streams, per owner and in total, and refuses one past either cap with a 429. */
export class SseStreams {
  readonly maxTotal: number;
  readonly maxPerOwner: number;
  #perOwner = new Map<string, number>();
  #total = 0;
  #closers = new Set<() => void>();

  constructor(caps: { maxStreams?: number; maxStreamsPerToken?: number } = {}) {
    this.maxTotal = caps.maxStreams ?? SSE_MAX_STREAMS;
    this.maxPerOwner = caps.maxStreamsPerToken ?? SSE_MAX_STREAMS_PER_TOKEN;
  }

  /** Open streams in total, or of one owner. */
  open(owner?: string): number {
    return owner === undefined ? this.#total : this.#perOwner.get(owner) ?? 0;
  }

  /**
   * Ends every open stream (their clients reconnect with Last-Event-ID): a server that stops
   * would otherwise wait for them forever, since `Deno.serve`'s shutdown lets open responses
   * finish and a stream never does.
   */
  closeAll(): void {
    for (const close of [...this.#closers]) close();
  }

  /** Registers how to end one open stream; the returned function forgets it. */
  track(close: () => void): () => void {
    this.#closers.add(close);
    return () => this.#closers.delete(close);
  }

  /** Takes a slot for `owner`; the returned function gives it back (once). */
  acquire(owner: string): () => void {
    const mine = this.open(owner);
    if (mine >= this.maxPerOwner) {
      throw tooMany(
        `this token has ${mine} open streams, at most ${this.maxPerOwner} ` +
          "(max_sse_streams_per_token in server.yaml)",
      );
    }
    if (this.#total >= this.maxTotal) {
      throw tooMany(
        `the server has ${this.#total} open streams, at most ${this.maxTotal} ` +
          "(max_sse_streams in server.yaml)",
      );
    }
    this.#perOwner.set(owner, mine + 1);
    this.#total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#total--;
      const left = (this.#perOwner.get(owner) ?? 1) - 1;
      if (left > 0) this.#perOwner.set(owner, left);
      else this.#perOwner.delete(owner);
    };
  }
}

function tooMany(state: string): HttpError {
  return new HttpError(
    429,
    "TooManyStreams",
    `Cannot open another event stream: ${state}; close one first`,
  );
}

/** The id a reconnecting client wants to resume after: `Last-Event-ID`, else `?after=`. */
export function resumeId(req: Request): number | null {
  const raw = req.headers.get("last-event-id") ?? new URL(req.url).searchParams.get("after");
  if (raw === null || raw === "") return null;
  const n = Number(raw);
  return Number.isSafeInteger(n) && n >= 0 ? n : null;
}

const encoder = new TextEncoder();

function frame(m: SseMessage): Uint8Array {
  return encoder.encode(`id: ${m.id}\ndata: ${JSON.stringify(m.data)}\n\n`);
}

/** Builds the streaming response; a 429 `HttpError` when a cap is reached. */
export function sseResponse(req: Request, source: SseSource, opts: SseOptions): Response {
  const maxBytes = opts.maxBufferedBytes ?? SSE_MAX_BUFFERED_BYTES;
  const pageSize = opts.pageSize ?? 500;
  const release = opts.streams.acquire(opts.owner);
  const untrack = opts.streams.track(() => {
    if (closed) return;
    finish("shutdown");
    try {
      controller.close();
    } catch {
      // already closed by its reader
    }
  });
  let lastSent = resumeId(req) ?? opts.startId;
  let live = false;
  let closed = false;
  let unsubscribe = () => {};
  let unsubscribeEnd = () => {};
  let timer: ReturnType<typeof setInterval> | undefined;
  // Our own queue (the stream's is kept at zero) so that its size is known and a client that
  // stops reading can be dropped together with everything queued for it.
  let queue: Uint8Array[] = [];
  let queuedBytes = 0;
  // Set when the source may have ended; checked once what is queued is sent.
  let recheckEnd = false;
  let wake: (() => void) | null = null;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  const finish = (reason: SseCloseReason) => {
    if (closed) return;
    closed = true;
    untrack();
    unsubscribe();
    unsubscribeEnd();
    clearInterval(timer);
    queue = [];
    queuedBytes = 0;
    release();
    wake?.();
    opts.onClose?.(reason);
  };
  const push = (chunk: Uint8Array): boolean => {
    if (closed) return false;
    queue.push(chunk);
    queuedBytes += chunk.byteLength;
    // One message larger than the bound (a big batch) may still be read at once: a client is
    // slow only when it leaves more than one message waiting past the bound.
    if (queuedBytes > maxBytes && queue.length > 1) {
      finish("slow");
      controller.close();
      return false;
    }
    wake?.();
    return true;
  };
  /** Sends `event: end` and closes when the source has ended. */
  const endIfEnded = (): boolean => {
    const data = source.end?.ended() ?? null;
    if (data === null) return false;
    controller.enqueue(encoder.encode(`event: end\ndata: ${JSON.stringify(data)}\n\n`));
    finish("end");
    controller.close();
    return true;
  };

  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      unsubscribe = source.subscribe((messages) => {
        if (!live) return; // the backlog query will find these in the store
        for (const m of messages) {
          if (m.id <= lastSent) continue;
          if (!push(frame(m))) return;
          lastSent = m.id;
        }
      });
      if (source.end) {
        unsubscribeEnd = source.end.subscribe(() => {
          recheckEnd = true;
          wake?.();
        });
      }
      timer = setInterval(
        () => push(encoder.encode(": keep-alive\n\n")),
        opts.keepAliveMs ?? SSE_KEEPALIVE_MS,
      );
      push(encoder.encode(": connected\n\n"));
    },
    async pull() {
      // Each call must enqueue something before it returns (or close the stream): with no
      // queue of its own (highWaterMark 0), the stream does not call pull again for a read
      // that was already waiting, and that reader would wait for good.
      try {
        for (;;) {
          if (closed) return;
          if (!live) {
            const page = source.backlog(lastSent, pageSize);
            // The backlog is paced by the client (pull runs only when it wants more), so it
            // bypasses the bound that protects against live data piling up.
            for (const m of page) {
              controller.enqueue(frame(m));
              lastSent = m.id;
            }
            // Backlog and switch happen in one synchronous turn, so no message published in
            // between can be missed: publishing happens after a commit, never inside this code.
            // Live once a page comes back empty: a page's messages may each hold many items (a
            // metrics page is one message of up to `pageSize` points), so a short page does not
            // say the backlog is done.
            if (page.length === 0) {
              live = true;
              if (endIfEnded()) return;
            }
            if (page.length > 0) return;
            continue;
          }
          while (queue.length === 0 && !recheckEnd && !closed) {
            await new Promise<void>((r) => wake = r);
          }
          wake = null;
          if (closed) return;
          const chunks = queue;
          queue = [];
          queuedBytes = 0;
          for (const chunk of chunks) controller.enqueue(chunk);
          if (recheckEnd) {
            // Everything committed before the end was published before it, so it is queued.
            recheckEnd = false;
            if (endIfEnded()) return;
          }
          if (chunks.length > 0) return;
          // Woken for an end that has not come (a RUN_STARTED, say): nothing was sent, so wait
          // again rather than return empty-handed.
        }
      } catch (err) {
        finish("error");
        controller.error(err);
      }
    },
    cancel() {
      finish("client");
    },
  }, { highWaterMark: 0 });

  return new Response(stream, {
    headers: {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
    },
  });
}

const registries = new WeakMap<Context, SseStreams>();

/** The stream counter of a context, made on first use from its `sse` caps. */
export function sseStreamsOf(ctx: Context): SseStreams {
  let s = registries.get(ctx);
  if (!s) registries.set(ctx, s = new SseStreams(ctx.sse));
  return s;
}

/** The options of a stream opened by this request's token, with the context's tuning. */
export function streamOptions(
  c: RequestContext,
  ctx: Context,
  startId: number,
  pageSize?: number,
): SseOptions {
  return {
    keepAliveMs: ctx.sse?.keepAliveMs,
    maxBufferedBytes: ctx.sse?.maxBufferedBytes,
    startId,
    pageSize,
    streams: sseStreamsOf(ctx),
    owner: principalOf(c).token_id,
  };
}
