import {
  logsQuery,
  metricsQuery,
  pointsPageQuery,
  runGroupsQuery,
  runListQuery,
  runMetricsQuery,
} from "../../../protocol/rest.ts";
import type { EventRecord, LogLine, StreamedPoint } from "../../../protocol/objects.ts";
import { encodeMetricValue } from "../../../protocol/metric_value.ts";
import { logs as logsDb, metrics as metricsDb } from "../../db/mod.ts";
import { topics } from "../../bus/bus.ts";
import type { Context } from "../../context.ts";
import {
  getLogs,
  getRun,
  listCheckpoints,
  listRunGroups,
  listRuns,
  mayEndRun,
  requireRun,
  runStreamEnd,
} from "../../runs/service.ts";
import { metricsQueryStream, readPointsPage, runMetricsStream } from "../../metrics/service.ts";
import { readJson, readQuery } from "../body.ts";
import { jsonStream } from "../json_stream.ts";
import { idParam, type RouteDef } from "../route.ts";
import { type SseMessage, sseResponse, type SseSource, streamOptions } from "../sse.ts";

/** A run's streams end once it has finished: `event: end` with its status. */
function runEnd(ctx: Context, id: string): SseSource["end"] {
  return {
    ended: () => runStreamEnd(ctx, id),
    subscribe: (recheck) =>
      ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
        if (mayEndRun(id, e)) recheck();
      }),
  };
}

export const runRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/runs",
    scope: "read",
    handler: (c, ctx) => c.json(listRuns(ctx, readQuery(c.req.url, runListQuery))),
  },
  {
    method: "GET",
    path: "/api/run-groups",
    scope: "read",
    handler: (c, ctx) => c.json(listRunGroups(ctx, readQuery(c.req.url, runGroupsQuery))),
  },
  {
    method: "GET",
    path: "/api/runs/:id",
    scope: "read",
    handler: (c, ctx) => c.json(getRun(ctx, idParam(c))),
  },
  {
    method: "GET",
    path: "/api/runs/:id/metrics",
    scope: "read",
    handler: (c, ctx) => {
      const id = idParam(c);
      requireRun(ctx, id);
      const { head, series } = runMetricsStream(ctx, id, readQuery(c.req.url, runMetricsQuery));
      return series ? jsonStream(head, "series", series) : c.json(head);
    },
  },
  {
    method: "POST",
    path: "/api/runs/metrics:query",
    scope: "read",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, metricsQuery, "metrics query");
      const { head, series } = metricsQueryStream(ctx, body);
      return jsonStream(head, "series", series);
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/metrics/points",
    scope: "read",
    handler: (c, ctx) => {
      const id = idParam(c);
      requireRun(ctx, id);
      return c.json(readPointsPage(ctx, id, readQuery(c.req.url, pointsPageQuery)));
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/metrics/stream",
    scope: "read",
    handler: (c, ctx) => {
      const id = idParam(c);
      requireRun(ctx, id);
      return sseResponse(c.req.raw, {
        backlog: (after, limit): SseMessage[] => {
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
        end: runEnd(ctx, id),
      }, streamOptions(c, ctx, metricsDb.lastPointSeq(ctx.db, id), 5000));
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/logs",
    scope: "read",
    handler: (c, ctx) => {
      const id = idParam(c);
      requireRun(ctx, id);
      return c.json(getLogs(ctx, id, readQuery(c.req.url, logsQuery)));
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/logs/stream",
    scope: "read",
    handler: (c, ctx) => {
      const id = idParam(c);
      requireRun(ctx, id);
      return sseResponse(c.req.raw, {
        backlog: (after, limit) => {
          const lines = logsDb.readLogs(ctx.db, id, after, limit);
          return lines.length ? [{ id: lines[lines.length - 1].seq, data: { lines } }] : [];
        },
        subscribe: (push) =>
          ctx.bus.subscribe<{ lines: LogLine[] }>(
            topics.logs(id),
            (m) => push([{ id: m.lines[m.lines.length - 1].seq, data: m }]),
          ),
        end: runEnd(ctx, id),
      }, streamOptions(c, ctx, logsDb.lastLogSeq(ctx.db, id), 200));
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/checkpoints",
    scope: "read",
    handler: (c, ctx) => c.json(listCheckpoints(ctx, idParam(c))),
  },
];
