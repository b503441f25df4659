/**
 * Series reads of panels that ask together, sent together: each panel asks for its runs of
 * its metric, and every ask made in the same task (the panels a page mounts or scrolls into
 * view at once) goes out as few `POST /api/runs/metrics:query` as the query's limits allow,
 * one per `max_points`. The query names runs × keys, so panels that draw the same runs share
 * one answer; each ask gets back only the series it named.
 *
 * @module
 */
import { MAX_QUERY_POINTS, MAX_QUERY_SERIES } from "../../protocol/limits.ts";
import type { ApiSeries } from "./panel_types.ts";

/** One panel's read: its runs of one key, at most `max_points` points a series. */
export interface SeriesAsk {
  runs: string[];
  key: string;
  max_points: number;
}

/** A `metrics:query` body. */
export interface SeriesQuery {
  runs: string[];
  keys: string[];
  max_points: number;
}

/**
 * The queries that answer `asks`: asks of the same `max_points` share one while its runs ×
 * keys stay within one query's limits (MAX_QUERY_SERIES series, MAX_QUERY_POINTS points);
 * together they name every run and key asked, in the order first asked. Pure.
 */
export function groupAsks(asks: readonly SeriesAsk[]): SeriesQuery[] {
  const out: SeriesQuery[] = [];
  const open = new Map<number, SeriesQuery>();
  for (const a of asks) {
    const q = open.get(a.max_points);
    if (q) {
      const runs = [...new Set([...q.runs, ...a.runs])];
      const keys = q.keys.includes(a.key) ? q.keys : [...q.keys, a.key];
      const series = runs.length * keys.length;
      if (series <= MAX_QUERY_SERIES && series * a.max_points <= MAX_QUERY_POINTS) {
        q.runs = runs;
        q.keys = keys;
        continue;
      }
    }
    const next = { runs: [...new Set(a.runs)], keys: [a.key], max_points: a.max_points };
    open.set(a.max_points, next);
    out.push(next);
  }
  return out;
}

interface Pending {
  ask: SeriesAsk;
  resolve: (s: ApiSeries[]) => void;
  reject: (err: unknown) => void;
}

/** Reads that collect the asks of one task and send them as one (`groupAsks`) after it. */
export interface ReadBatch {
  /** The series of `ask` (those that exist), read with the other asks of this task. */
  ask(ask: SeriesAsk): Promise<ApiSeries[]>;
  /**
   * Sends what was asked so far now, instead of once the task's microtasks run (after the
   * renders a page's layout effects queued, which draw the panels that need no read).
   */
  flush(): void;
}

/** `POST /api/runs/metrics:query` from the page, its series as the API writes them. */
export async function querySeries(body: unknown): Promise<ApiSeries[]> {
  const res = await fetch("/api/runs/metrics:query", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  if (!res.ok) throw new Error(`metrics:query answered ${res.status}`);
  return ((await res.json()) as { series: ApiSeries[] }).series;
}

/** A batch that sends its queries with `send`. */
export function readBatch(send: (q: SeriesQuery) => Promise<ApiSeries[]>): ReadBatch {
  let pending: Pending[] = [];
  const flush = () => {
    if (!pending.length) return;
    const asks = pending;
    pending = [];
    for (const q of groupAsks(asks.map((p) => p.ask))) {
      const mine = asks.filter((p) =>
        p.ask.max_points === q.max_points && q.keys.includes(p.ask.key) &&
        p.ask.runs.every((r) => q.runs.includes(r))
      );
      // An ask is answered by the first query that names all of it.
      for (const p of mine) asks.splice(asks.indexOf(p), 1);
      send(q).then((got) => {
        for (const p of mine) {
          p.resolve(got.filter((s) => s.key === p.ask.key && p.ask.runs.includes(s.run_id)));
        }
      }, (err) => {
        for (const p of mine) p.reject(err);
      });
    }
  };
  return {
    ask(ask) {
      return new Promise((resolve, reject) => {
        // The first ask of a task sends them all once the task's other panels have asked.
        if (!pending.length) queueMicrotask(flush);
        pending.push({ ask, resolve, reject });
      });
    },
    flush,
  };
}

/**
 * The panels' first reads: those a page mounts or scrolls to at once ask in one query. A page
 * that composes panels flushes it from its own layout effect, which runs after theirs.
 */
export const firstReads: ReadBatch = readBatch(querySeries);
