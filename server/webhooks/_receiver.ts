/**
 * A local HTTP receiver for the webhook tests: records every request and answers as told.
 * Bounded: it closes itself after `lifetimeMs`, and `close()` releases any held answer.
 */

/** One request as the receiver saw it. */
export interface Received {
  method: string;
  /** The path as sent, percent-encoding kept. */
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: string;
}

/** How the receiver answers the `n`th request (0-based); `closing` aborts when it shuts down. */
// `closing` is not tied to `req.signal`: reading that signal warns under Deno's legacy abort
// behaviour, and a hanging answer only has to end by the time the receiver closes.
export type Answer = (
  req: Received,
  n: number,
  closing: AbortSignal,
) => Response | Promise<Response>;

export interface Receiver {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  url: string;
  requests: Received[];
  /** The requests to one path, in arrival order. */
  at(path: string): Received[];
  /** Resolves once `n` requests have arrived; rejects after `ms`. */
  waitFor(n: number, ms?: number): Promise<void>;
  close(): Promise<void>;
}

/** An answer that never comes before the receiver closes. */
export const hang: Answer = (_req, _n, closing) =>
  new Promise((resolve) => {
    const answer = () => resolve(new Response("too late", { status: 504 }));
    if (closing.aborted) answer();
    else closing.addEventListener("abort", answer, { once: true });
  });

/** Starts a receiver on a free loopback port. */
export function startReceiver(
  answer: Answer = () => new Response("ok"),
  { lifetimeMs = 10_000 } = {},
): Receiver {
  const requests: Received[] = [];
  const closing = new AbortController();
  const waiters = new Set<() => void>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: closing.signal, onListen: () => {} },
    async (req) => {
      const url = new URL(req.url);
      const received: Received = {
        method: req.method,
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: await req.text(),
      };
      const n = requests.push(received) - 1;
      for (const wake of waiters) wake();
      return await answer(received, n, closing.signal);
    },
  );
  const lifetime = setTimeout(() => closing.abort(), lifetimeMs);
  const url = `http://127.0.0.1:${server.addr.port}`;
  return {
    url,
    requests,
    at: (path) => requests.filter((r) => r.path === path),
    waitFor(n, ms = 5000) {
      if (requests.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const wake = () => {
          if (requests.length < n) return;
          done();
          resolve();
        };
        const timer = setTimeout(() => {
          done();
          reject(new Error(`receiver got ${requests.length} requests in ${ms} ms, wanted ${n}`));
        }, ms);
        const done = () => {
          clearTimeout(timer);
          waiters.delete(wake);
        };
        waiters.add(wake);
      });
    },
    async close() {
      clearTimeout(lifetime);
      closing.abort();
      await server.finished;
    },
  };
}
