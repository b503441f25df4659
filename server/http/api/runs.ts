/**
 * The run read routes: lists and groups, one run, its metrics (keys, series, points, live
 * streams), its logs (and their stream) and its checkpoints.
 */
import {
  metricsQuery,
  pointsPageQuery,
  runMetricsQuery,
  runsMetricsStreamQuery,
} from "../../../protocol/rest/metrics.ts";
import { logsQuery, runGroupsQuery, runListQuery } from "../../../protocol/rest/runs.ts";
import {
  getLogs,
  listCheckpoints,
  listRunGroups,
  listRuns,
  requireRun,
} from "../../runs/service.ts";
import { getRunDetail } from "../../lineage/service.ts";
import { runMetricRows } from "../../semantic/metric_rows.ts";
import { runLogsFeed, runMetricsFeed, runsMetricsFeed } from "../../runs/feeds.ts";
import { metricsQueryStream, readPointsPage, runMetricsStream } from "../../metrics/service.ts";
import { readJson, readQuery } from "../body.ts";
import { jsonStream } from "../json_stream.ts";
import { idParam, type RouteDef } from "../route.ts";
import { sseResponse, streamOptions } from "../sse.ts";

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
    path: "/api/runs/metrics:stream",
    scope: "read",
    handler: (c, ctx) => {
      const feed = runsMetricsFeed(ctx, readQuery(c.req.url, runsMetricsStreamQuery).runs);
      return sseResponse(c.req.raw, feed, streamOptions(c, ctx, feed.lastId(), 5000));
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id",
    scope: "read",
    handler: (c, ctx) => c.json(getRunDetail(ctx, idParam(c))),
  },
  {
    method: "GET",
    path: "/api/runs/:id/metric-summary",
    scope: "read",
    handler: async (c, ctx) => c.json({ items: await runMetricRows(ctx, idParam(c)) }),
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
      const feed = runMetricsFeed(ctx, idParam(c));
      return sseResponse(c.req.raw, feed, streamOptions(c, ctx, feed.lastId(), 5000));
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
      const feed = runLogsFeed(ctx, idParam(c));
      return sseResponse(c.req.raw, feed, streamOptions(c, ctx, feed.lastId(), 200));
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/checkpoints",
    scope: "read",
    handler: (c, ctx) => c.json(listCheckpoints(ctx, idParam(c))),
  },
];
