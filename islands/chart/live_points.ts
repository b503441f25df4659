/**
 * Live points for every chart panel of a page over ONE stream: the browser keeps at most six
 * connections per host over HTTP/1.1, so panels never open a stream each. Panels listen per
 * (run, key); the hub keeps one subscription to `/api/runs/metrics:stream?runs=<union>` for
 * the union of the runs listened to, re-opened (resuming after the last point's seq) when the
 * union changes, the changes of one render batched into one re-open. When the stream says
 * every run in it has finished, listeners hear so (a panel stops its repair poll).
 *
 * @module
 */
import { subscribe } from "../_live.ts";
import type { LivePoint } from "./series.ts";
import { MAX_STREAMED_RUNS } from "../../protocol/limits.ts";

/** A point of the multi-run stream. */
export interface StreamPoint extends LivePoint {
  run_id: string;
  seq: number;
  key: string;
}

type Listener = (points: LivePoint[]) => void;

/** The stream's URL for a set of runs (sorted, so the same set is the same URL). */
export function streamUrl(runs: Iterable<string>): string {
  const ids = [...new Set(runs)].sort();
  return `/api/runs/metrics:stream?runs=${ids.map(encodeURIComponent).join(",")}`;
}

/** A message's points by `run\0key`, each group in arrival order. */
export function groupPoints(message: unknown): Map<string, StreamPoint[]> {
  const groups = new Map<string, StreamPoint[]>();
  const points = (message as { points?: unknown } | null)?.points;
  if (!Array.isArray(points)) return groups;
  for (const p of points as StreamPoint[]) {
    if (typeof p?.run_id !== "string" || typeof p.key !== "string") continue;
    const id = `${p.run_id}\0${p.key}`;
    const g = groups.get(id);
    if (g) g.push(p);
    else groups.set(id, [p]);
  }
  return groups;
}

export interface LivePoints {
  /**
   * Calls `listener` with each batch of new points of `key` in `runId`, and `ended` once the
   * stream has ended because every run in it finished; returns the stop.
   */
  listen(runId: string, key: string, listener: Listener, ended?: () => void): () => void;
  /** The URL of the one open stream (null: none open), for tests. */
  openUrl(): string | null;
}

/** A hub over `sub` (the page's shared EventSources). */
export function createLivePoints(sub: typeof subscribe): LivePoints {
  const listeners = new Map<string, Set<Listener>>();
  const endings = new Set<() => void>();
  const runs = new Map<string, number>();
  let open: { url: string; stop: () => void } | null = null;
  let lastSeq: number | null = null;
  let queued = false;

  const dispatch = (message: unknown) => {
    for (const [id, points] of groupPoints(message)) {
      for (const p of points) if (lastSeq === null || p.seq > lastSeq) lastSeq = p.seq;
      const set = listeners.get(id);
      if (!set) continue;
      const batch = points.map((p) => ({ step: p.step, value: p.value, wall_time: p.wall_time }));
      for (const l of set) l(batch);
    }
  };
  const reopen = () => {
    queued = false;
    // Runs past the server's limit are kept up by the panels' poll.
    const ids = [...runs.keys()].sort().slice(0, MAX_STREAMED_RUNS);
    const url = ids.length ? streamUrl(ids) : null;
    if (url === (open?.url ?? null)) return;
    open?.stop();
    const end = () => {
      for (const e of [...endings]) e();
    };
    open = url ? { url, stop: sub(url, { message: dispatch, end, after: lastSeq }) } : null;
  };
  const changed = () => {
    if (queued) return;
    queued = true;
    queueMicrotask(reopen);
  };

  return {
    listen(runId, key, listener, ended) {
      const id = `${runId}\0${key}`;
      let set = listeners.get(id);
      if (!set) listeners.set(id, set = new Set());
      set.add(listener);
      if (ended) endings.add(ended);
      runs.set(runId, (runs.get(runId) ?? 0) + 1);
      if (runs.get(runId) === 1) changed();
      let stopped = false;
      return () => {
        if (stopped) return;
        stopped = true;
        set.delete(listener);
        if (ended) endings.delete(ended);
        if (!set.size) listeners.delete(id);
        const n = (runs.get(runId) ?? 1) - 1;
        if (n > 0) runs.set(runId, n);
        else {
          runs.delete(runId);
          changed();
        }
      };
    },
    openUrl: () => open?.url ?? null,
  };
}

/** The page's hub: every panel of the page shares it. */
export const livePoints: LivePoints = createLivePoints(subscribe);
