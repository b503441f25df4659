/**
 * The live fan-out of stored points and lines, once per transaction: each run's points (and
 * lines) from every batch a transaction stored are published as one message after its commit,
 * not one per batch. Subscribers (SSE streams, the rules, the series cache, sweeps) see the
 * same points in the same order, in fewer, larger messages.
 */
import type { LogLine } from "../../protocol/objects.ts";
import { encodeMetricValue } from "../../protocol/metric_value.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import type { StoredPoint } from "../db/metrics.ts";

interface Pending {
  points: Map<string, StoredPoint[]>;
  lines: Map<string, LogLine[]>;
}

const pendingOf = new WeakMap<Context, Pending>();

function pending(ctx: Context): Pending {
  let p = pendingOf.get(ctx);
  if (!p) {
    const fresh: Pending = { points: new Map(), lines: new Map() };
    pendingOf.set(ctx, p = fresh);
    ctx.db.afterEveryCommit(() => publish(ctx, fresh));
  }
  return p;
}

function append<T>(map: Map<string, T[]>, runId: string, items: T[]): void {
  const list = map.get(runId);
  if (!list) map.set(runId, items);
  else for (const x of items) list.push(x);
}

/**
 * Publishes `points` and `lines` of `runId` once the current transaction commits (merged with
 * the run's others of the same transaction); nothing when it rolls back.
 */
export function publishAfterCommit(
  ctx: Context,
  runId: string,
  points: StoredPoint[],
  lines: LogLine[],
): void {
  if (points.length === 0 && lines.length === 0) return;
  const p = pending(ctx);
  // Collected only once committed: a savepoint or transaction rolled back drops its callbacks.
  ctx.db.afterCommit(() => {
    if (points.length) append(p.points, runId, points);
    if (lines.length) append(p.lines, runId, lines);
  });
  // Outside a transaction the callback ran at once and no commit follows: publish now.
  if (!ctx.db.sqlite.isTransaction) publish(ctx, p);
}

function publish(ctx: Context, p: Pending): void {
  if (p.points.size === 0 && p.lines.size === 0) return;
  const points = p.points;
  const lines = p.lines;
  p.points = new Map();
  p.lines = new Map();
  for (const [runId, stored] of points) {
    // Encoded for JSON only when a live stream listens.
    if (ctx.bus.listenerCount(topics.metrics(runId)) > 0) {
      const encoded = stored.map((pt) => ({ ...pt, value: encodeMetricValue(pt.value) }));
      ctx.bus.publish(topics.metrics(runId), { points: encoded });
    }
    ctx.bus.publish(topics.allMetrics, { run_id: runId, points: stored });
  }
  for (const [runId, stored] of lines) {
    ctx.bus.publish(topics.logs(runId), { lines: stored });
    ctx.bus.publish(topics.allLogs, { run_id: runId, lines: stored });
  }
}
