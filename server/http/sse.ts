/**
 * Server-Sent Events with resume and a bounded buffer. A stream first replays what the
 * client missed from the store (in pages, as fast as the client reads), then switches to
 * live messages from the bus. A client that stops reading is dropped once its unsent data
 * passes `maxBufferedBytes`, so it cannot make the server's memory grow.
 */

/** One SSE message; `id` is what a client sends back as Last-Event-ID. */
export interface SseMessage {
  id: number;
  data: unknown;
}

export interface SseSource {
  /** Messages after `afterId`, oldest first, at most `limit`. */
  backlog(afterId: number, limit: number): SseMessage[];
  /** Live messages; returns the unsubscribe function. */
  subscribe(push: (messages: SseMessage[]) => void): () => void;
}

export interface SseOptions {
  /** Where to start when the client names no id. */
  startId: number;
  /** @default 15_000 */
  keepAliveMs?: number;
  /** @default 1_048_576 */
  maxBufferedBytes?: number;
  /** @default 500 */
  pageSize?: number;
  /** Called once when the stream ends, with why. */
  onClose?: (reason: "client" | "slow" | "error") => void;
}

/** Default bound on a subscriber's unsent bytes before it is dropped. */
export const SSE_MAX_BUFFERED_BYTES = 1024 * 1024;
/** Default interval of keep-alive comments. */
export const SSE_KEEPALIVE_MS = 15_000;

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

/** Builds the streaming response. */
export function sseResponse(req: Request, source: SseSource, opts: SseOptions): Response {
  const maxBytes = opts.maxBufferedBytes ?? SSE_MAX_BUFFERED_BYTES;
  const pageSize = opts.pageSize ?? 500;
  let lastSent = resumeId(req) ?? opts.startId;
  let live = false;
  let closed = false;
  let unsubscribe = () => {};
  let timer: ReturnType<typeof setInterval> | undefined;
  // Our own queue (the stream's is kept at zero) so that its size is known and a client that
  // stops reading can be dropped together with everything queued for it.
  let queue: Uint8Array[] = [];
  let queuedBytes = 0;
  let wake: (() => void) | null = null;
  let controller!: ReadableStreamDefaultController<Uint8Array>;

  const finish = (reason: "client" | "slow" | "error") => {
    if (closed) return;
    closed = true;
    unsubscribe();
    clearInterval(timer);
    queue = [];
    queuedBytes = 0;
    wake?.();
    opts.onClose?.(reason);
  };
  const push = (chunk: Uint8Array): boolean => {
    if (closed) return false;
    queue.push(chunk);
    queuedBytes += chunk.byteLength;
    if (queuedBytes > maxBytes) {
      finish("slow");
      controller.close();
      return false;
    }
    wake?.();
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
      timer = setInterval(
        () => push(encoder.encode(": keep-alive\n\n")),
        opts.keepAliveMs ?? SSE_KEEPALIVE_MS,
      );
      push(encoder.encode(": connected\n\n"));
    },
    async pull() {
      if (!live && !closed) {
        let page: SseMessage[];
        try {
          page = source.backlog(lastSent, pageSize);
        } catch (err) {
          finish("error");
          controller.error(err);
          return;
        }
        // The backlog is paced by the client (pull runs only when it wants more), so it
        // bypasses the bound that protects against live data piling up.
        for (const m of page) {
          controller.enqueue(frame(m));
          lastSent = m.id;
        }
        // Backlog and switch happen in one synchronous turn, so no message published in
        // between can be missed: publishing happens after a commit, never inside this code.
        if (page.length < pageSize) live = true;
      }
      while (queue.length === 0 && !closed) await new Promise<void>((r) => wake = r);
      wake = null;
      if (closed) return;
      const chunks = queue;
      queue = [];
      queuedBytes = 0;
      for (const chunk of chunks) controller.enqueue(chunk);
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
