/**
 * Live data for islands: one EventSource per stream URL shared by every island on the page
 * (the server caps open streams per token), reopened with backoff when the browser gives up
 * on it (a server restart that outlasts its own retries, a refused stream), resumed from the
 * last id it carried; and JSON reads that refresh when a stream says something changed.
 */
import { useEffect, useRef, useState } from "preact/hooks";

/** The connection of a stream as a reader sees it. */
export type LiveState = "connecting" | "connected" | "reconnecting" | "ended";

type Listener = (data: unknown) => void;

interface Shared {
  url: string;
  source: EventSource | null;
  lastId: string | null;
  state: LiveState;
  listeners: Set<Listener>;
  stateListeners: Set<(s: LiveState, reopened: boolean) => void>;
  endListeners: Set<() => void>;
  retryMs: number;
  timer: ReturnType<typeof setTimeout> | null;
  everOpen: boolean;
}

const streams = new Map<string, Shared>();
const MAX_RETRY_MS = 15_000;

function setState(s: Shared, state: LiveState, reopened = false): void {
  s.state = state;
  for (const l of s.stateListeners) l(state, reopened);
}

function open(s: Shared): void {
  let url = s.url;
  if (s.lastId !== null) {
    url += (url.includes("?") ? "&" : "?") + `after=${encodeURIComponent(s.lastId)}`;
  }
  const source = new EventSource(url);
  s.source = source;
  source.onopen = () => {
    const reopened = s.everOpen;
    s.everOpen = true;
    s.retryMs = 1000;
    setState(s, "connected", reopened);
  };
  source.onmessage = (m) => {
    if (m.lastEventId) s.lastId = m.lastEventId;
    let data: unknown;
    try {
      data = JSON.parse(m.data);
    } catch {
      return;
    }
    for (const l of s.listeners) l(data);
  };
  source.addEventListener("end", () => {
    source.close();
    s.source = null;
    setState(s, "ended");
    for (const l of s.endListeners) l();
  });
  source.onerror = () => {
    if (s.state === "ended") return;
    setState(s, "reconnecting");
    if (source.readyState === EventSource.CLOSED) {
      // The browser stopped retrying (a 4xx/5xx answer): try again ourselves, slower each time.
      s.source = null;
      s.timer = setTimeout(() => {
        s.timer = null;
        if (s.listeners.size || s.stateListeners.size) open(s);
      }, s.retryMs);
      s.retryMs = Math.min(MAX_RETRY_MS, s.retryMs * 2);
    }
  };
}

/**
 * Listens to the stream at `url` (same origin; the session cookie goes along); `after` resumes
 * after an id the page already shows. Returns the function that stops listening.
 */
export function subscribe(
  url: string,
  handlers: {
    message?: Listener;
    state?: (s: LiveState, reopened: boolean) => void;
    end?: () => void;
    after?: string | number | null;
  },
): () => void {
  let s = streams.get(url);
  if (!s) {
    s = {
      url,
      source: null,
      lastId: handlers.after === undefined || handlers.after === null
        ? null
        : String(handlers.after),
      state: "connecting",
      listeners: new Set(),
      stateListeners: new Set(),
      endListeners: new Set(),
      retryMs: 1000,
      timer: null,
      everOpen: false,
    };
    streams.set(url, s);
  }
  const shared = s;
  if (handlers.message) shared.listeners.add(handlers.message);
  if (handlers.state) {
    shared.stateListeners.add(handlers.state);
    handlers.state(shared.state, false);
  }
  if (handlers.end) shared.endListeners.add(handlers.end);
  if (!shared.source && !shared.timer && shared.state !== "ended") open(shared);
  return () => {
    if (handlers.message) shared.listeners.delete(handlers.message);
    if (handlers.state) shared.stateListeners.delete(handlers.state);
    if (handlers.end) shared.endListeners.delete(handlers.end);
    if (!shared.listeners.size && !shared.stateListeners.size) {
      shared.source?.close();
      if (shared.timer) clearTimeout(shared.timer);
      streams.delete(url);
    }
  };
}

/** The server's event stream, which every page listens to. */
export const EVENTS_URL = "/api/events/stream";

/** The state of a stream's connection, for a "reconnecting…" marker. */
export function useLiveState(url = EVENTS_URL): LiveState {
  const [state, set] = useState<LiveState>("connecting");
  useEffect(() => subscribe(url, { state: (s) => set(s) }), [url]);
  return state;
}

/** An event as the stream carries it. */
export interface LiveEvent {
  id: number;
  type: string;
  severity: string;
  run_id: string | null;
  job_id: string | null;
  node_id: string | null;
  message: string;
  ts: string;
}

/**
 * JSON from `url` (a GET, or a POST of `body`), starting from what the server rendered:
 * read again when an event passes `refreshOn`, when the event stream comes back after a
 * loss (what changed meanwhile is unknown), and every `everyMs` when given (values no stream
 * carries, such as GPU telemetry).
 */
export function useJson<T>(
  url: string,
  initial: T,
  opts: {
    refreshOn?: (e: LiveEvent) => boolean;
    everyMs?: number;
    body?: unknown;
    /** Read nothing (yet). */
    skip?: boolean;
  } = {},
): T {
  const [value, setValue] = useState<T>(initial);
  const mounted = useRef(false);
  const optsRef = useRef(opts);
  optsRef.current = opts;
  const bodyKey = opts.body === undefined ? "" : JSON.stringify(opts.body);
  const skip = !!opts.skip;
  useEffect(() => {
    if (skip) return;
    let stopped = false;
    let pending: ReturnType<typeof setTimeout> | null = null;
    let inFlight = false;
    let again = false;
    const load = async () => {
      if (inFlight) {
        again = true;
        return;
      }
      inFlight = true;
      try {
        const res = await fetch(url, {
          method: bodyKey ? "POST" : "GET",
          headers: bodyKey ? { "content-type": "application/json" } : undefined,
          body: bodyKey || undefined,
          credentials: "same-origin",
        });
        if (res.ok && !stopped) setValue(await res.json() as T);
      } catch {
        // the server is away: the stream's marker says so; the next trigger reads again
      } finally {
        inFlight = false;
        if (again && !stopped) {
          again = false;
          load();
        }
      }
    };
    const soon = () => {
      if (pending) return;
      pending = setTimeout(() => {
        pending = null;
        load();
      }, 200);
    };
    const stop = subscribe(EVENTS_URL, {
      message: (e) => {
        const f = optsRef.current.refreshOn;
        if (f && f(e as LiveEvent)) soon();
      },
      state: (s, reopened) => {
        if (s === "connected" && reopened) soon();
      },
    });
    const every = optsRef.current.everyMs;
    const timer = every ? setInterval(load, every) : null;
    // The first values came with the page; a changed query needs its own at once.
    if (mounted.current) load();
    mounted.current = true;
    return () => {
      stopped = true;
      stop();
      if (timer) clearInterval(timer);
      if (pending) clearTimeout(pending);
    };
  }, [url, bodyKey, skip]);
  return value;
}

/**
 * The current time, ticking every `ms`, so relative times stay true; it starts at the time the
 * server rendered with, so hydration finds the same text.
 */
export function useNow(rendered: number, ms = 10_000): number {
  const [now, setNow] = useState(rendered);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
