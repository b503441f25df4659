/**
 * Recently read series kept in memory as columns, so charts that refresh do not read
 * every point out of SQLite again. A series is filled from the store on first read, grows
 * in place when new points arrive in step order (the common case: a training run
 * appending), and is dropped when a write lands at or before its last step (a rewrite or an
 * out-of-order point), to be reread on the next query. Bounded by bytes, least recently
 * used first out.
 */
import type { StoredPoint } from "../db/metrics.ts";
import type { SeriesColumns } from "../db/metric_blocks.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";

/** Default memory bound of the cache. */
export const SERIES_CACHE_BYTES = 128 * 1024 * 1024;

const BYTES_PER_POINT = 24; // step, value, wall time as float64

export class SeriesCache {
  #entries = new Map<string, SeriesColumns>();
  #loading = new Map<string, { dirty: boolean; promise: Promise<SeriesColumns> }>();
  #bytes = 0;
  #maxBytes: number;

  constructor(maxBytes = SERIES_CACHE_BYTES) {
    this.#maxBytes = maxBytes;
  }

  /** The cached series of a run's key, or the one `load` reads (and then caches). */
  get(
    runId: string,
    key: string,
    load: () => SeriesColumns,
  ): SeriesColumns {
    const hit = this.peek(runId, key);
    if (hit) return hit;
    const entry = load();
    this.#keep(`${runId}\u0000${key}`, entry);
    return entry;
  }

  #keep(id: string, entry: SeriesColumns): void {
    this.#bytes += capacityBytes(entry);
    this.#entries.set(id, entry);
    this.#evict();
  }

  /** The cached series of a run's key, if held (counts as a use). */
  peek(runId: string, key: string): SeriesColumns | undefined {
    const id = `${runId}\u0000${key}`;
    const hit = this.#entries.get(id);
    if (hit) {
      // Map order is recency order: move to the end.
      this.#entries.delete(id);
      this.#entries.set(id, hit);
    }
    return hit;
  }

  /**
   * Like `get`, for a load that lets other work run while it reads. Concurrent callers of
   * one series share one load. A write to the series while it loads may fall behind the
   * load's position, so such a load is returned but not kept.
   */
  getAsync(
    runId: string,
    key: string,
    load: () => Promise<SeriesColumns>,
  ): Promise<SeriesColumns> {
    const hit = this.peek(runId, key);
    if (hit) return Promise.resolve(hit);
    const id = `${runId}\u0000${key}`;
    const pending = this.#loading.get(id);
    if (pending) return pending.promise;
    const entry = { dirty: false, promise: null as unknown as Promise<SeriesColumns> };
    entry.promise = (async () => {
      try {
        const series = await load();
        if (!entry.dirty && capacityBytes(series) <= this.#maxBytes) this.#keep(id, series);
        return series;
      } finally {
        this.#loading.delete(id);
      }
    })();
    this.#loading.set(id, entry);
    return entry.promise;
  }

  /** Applies a committed write batch of one run to the series it holds. */
  onWrite(runId: string, points: StoredPoint[]): void {
    if (this.#loading.size > 0) {
      for (const p of points) {
        const pending = this.#loading.get(`${runId}\u0000${p.key}`);
        if (pending) pending.dirty = true;
      }
    }
    if (this.#entries.size === 0) return;
    // Per key, the points to apply, or null when the cache does not hold that series.
    const byKey = new Map<string, StoredPoint[] | null>();
    for (const p of points) {
      let list = byKey.get(p.key);
      if (list === undefined) {
        list = this.#entries.has(`${runId}\u0000${p.key}`) ? [] : null;
        byKey.set(p.key, list);
      }
      list?.push(p);
    }
    for (const [key, list] of byKey) {
      if (list === null) continue;
      const id = `${runId}\u0000${key}`;
      const entry = this.#entries.get(id)!;
      let last = entry.length ? entry.steps[entry.length - 1] : -Infinity;
      const appendable = list.every((p) => {
        const ok = p.step > last;
        last = p.step;
        return ok;
      });
      if (!appendable) {
        this.#drop(id, entry);
        continue;
      }
      this.#append(entry, list);
    }
    this.#evict();
  }

  /** Bytes held (capacity of the column arrays). */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  #append(entry: SeriesColumns, points: StoredPoint[]): void {
    const need = entry.length + points.length;
    if (need > entry.steps.length) {
      const before = capacityBytes(entry);
      const capacity = Math.max(need, Math.ceil(entry.steps.length * 1.5), 64);
      entry.steps = grow(entry.steps, capacity);
      entry.values = grow(entry.values, capacity);
      entry.wallTimes = grow(entry.wallTimes, capacity);
      this.#bytes += capacityBytes(entry) - before;
    }
    for (const p of points) {
      entry.steps[entry.length] = p.step;
      entry.values[entry.length] = p.value;
      entry.wallTimes[entry.length] = p.wall_time;
      entry.length++;
    }
  }

  #drop(id: string, entry: SeriesColumns): void {
    this.#entries.delete(id);
    this.#bytes -= capacityBytes(entry);
  }

  #evict(): void {
    for (const [id, entry] of this.#entries) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#drop(id, entry);
    }
  }
}

function capacityBytes(entry: SeriesColumns): number {
  return entry.steps.length * BYTES_PER_POINT;
}

function grow(a: Float64Array, capacity: number): Float64Array {
  const b = new Float64Array(capacity);
  b.set(a);
  return b;
}

/** Gives the context a series cache kept current by the committed writes on the bus. */
export function attachSeriesCache(ctx: Context, maxBytes = SERIES_CACHE_BYTES): SeriesCache {
  const cache = new SeriesCache(maxBytes);
  ctx.bus.subscribe<{ run_id: string; points: StoredPoint[] }>(
    topics.allMetrics,
    (m) => cache.onWrite(m.run_id, m.points),
  );
  ctx.series = cache;
  return cache;
}
