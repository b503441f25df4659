/** A run's live metric points and log lines as feeds (see `server/bus/feed.ts`). */
import type { EventRecord, LogLine, StreamedPoint } from "../../protocol/objects.ts";
import { encodeMetricValue } from "../../protocol/metric_value.ts";
import { logs as logsDb, metrics as metricsDb } from "../db/mod.ts";
import { topics } from "../bus/bus.ts";
import type { Feed } from "../bus/feed.ts";
import type { Context } from "../context.ts";
import { mayEndRun, requireRun, runStreamEnd } from "./service.ts";

/** A run's feeds end once it has finished, with `{run_id, status}`. */
function runEnd(ctx: Context, id: string): Feed["end"] {
  return {
    ended: () => runStreamEnd(ctx, id),
    subscribe: (recheck) =>
      ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
        if (mayEndRun(id, e)) recheck();
      }),
  };
}

/** `GET /api/runs/{id}/metrics/stream`: `{points}` messages, each id the page's last seq. */
export function runMetricsFeed(ctx: Context, id: string): Feed {
  requireRun(ctx, id);
  return {
    backlog: (after, limit) => {
      const points = metricsDb.pointsAfter(ctx.db, id, after, limit);
      // One message per page keeps framing cheap; its id is the page's last sequence.
      return points.length
        ? [{
          id: points[points.length - 1].seq,
          data: { points: points.map((p) => ({ ...p, value: encodeMetricValue(p.value) })) },
        }]
        : [];
    },
    subscribe: (push) =>
      ctx.bus.subscribe<{ points: StreamedPoint[] }>(
        topics.metrics(id),
        (m) => push([{ id: m.points[m.points.length - 1].seq, data: m }]),
      ),
    lastId: () => metricsDb.lastPointSeq(ctx.db, id),
    end: runEnd(ctx, id),
  };
}

/**
 * `GET /api/runs/metrics:stream?runs=…`: the points of several runs in one stream (a page
 * follows every live run of its charts over one connection), `{points}` messages whose points
 * carry their `run_id`. Ids are the points' write sequence, which is global, so one id resumes
 * every run at once. Ends once every run has finished, with `{runs: [{run_id, status}]}`.
 */
export function runsMetricsFeed(ctx: Context, ids: readonly string[]): Feed {
  const runIds = [...new Set(ids)];
  for (const id of runIds) requireRun(ctx, id);
  return {
    backlog: (after, limit) => {
      // Each run's first `limit` points after the id, merged in write order and cut at
      // `limit`: no point below the cut can be missing, as each run gave its first ones.
      const points = runIds.flatMap((id) =>
        metricsDb.pointsAfter(ctx.db, id, after, limit).map((p) => ({
          run_id: id,
          ...p,
          value: encodeMetricValue(p.value),
        }))
      ).sort((a, b) => a.seq - b.seq).slice(0, limit);
      return points.length ? [{ id: points[points.length - 1].seq, data: { points } }] : [];
    },
    subscribe: (push) => {
      const offs = runIds.map((id) =>
        ctx.bus.subscribe<{ points: StreamedPoint[] }>(
          topics.metrics(id),
          (m) =>
            push([{
              id: m.points[m.points.length - 1].seq,
              data: { points: m.points.map((p) => ({ run_id: id, ...p })) },
            }]),
        )
      );
      return () => offs.forEach((off) => off());
    },
    lastId: () => Math.max(0, ...runIds.map((id) => metricsDb.lastPointSeq(ctx.db, id))),
    end: {
      ended: () => {
        const ends = runIds.map((id) => runStreamEnd(ctx, id));
        return ends.every((e) => e !== null) ? { runs: ends } : null;
      },
      subscribe: (recheck) =>
        ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
          if (runIds.some((id) => mayEndRun(id, e))) recheck();
        }),
    },
  };
}

/** `GET /api/runs/{id}/logs/stream`: `{lines}` messages, each id the page's last seq. */
export function runLogsFeed(ctx: Context, id: string): Feed {
  requireRun(ctx, id);
  return {
    backlog: (after, limit) => {
      const lines = logsDb.readLogs(ctx.db, id, after, limit);
      return lines.length ? [{ id: lines[lines.length - 1].seq, data: { lines } }] : [];
    },
    subscribe: (push) =>
      ctx.bus.subscribe<{ lines: LogLine[] }>(
        topics.logs(id),
        (m) => push([{ id: m.lines[m.lines.length - 1].seq, data: m }]),
      ),
    // -1 with no line yet: a first line may carry seq 0 (the SDK may number from 0).
    lastId: () => logsDb.newestLogSeq(ctx.db, id) ?? -1,
    end: runEnd(ctx, id),
  };
}
