import { z } from "zod";
import {
  MAX_NAME_LENGTH,
  MAX_SERIES_POINTS,
  metricsQuery,
  RUN_STATUSES,
} from "../../../protocol/rest.ts";
import { logs as logsDb, metrics as metricsDb, runs as runsDb } from "../../db/mod.ts";
import { topics } from "../../bus/bus.ts";
import type { Context } from "../../context.ts";
import { getRun, withPrimaryMetric } from "../../runs/service.ts";
import { planMetricsQuery, readPlannedSeries } from "../../metrics/query.ts";
import { POINTS_PAGE_SIZE, readPointsPage } from "../../metrics/points_page.ts";
import { checkpointsWithEvaluations } from "../../evaluations/mod.ts";
import {
  encodeMetricValue,
  type EventRecord,
  type LogLine,
  type StreamedPoint,
} from "../../../protocol/objects.ts";
import { readJson, readQuery } from "../body.ts";
import { notFound, validationError } from "../../errors.ts";
import { jsonStream } from "../json_stream.ts";
import { idParam, type RequestContext, type RouteDef } from "../route.ts";
import { type SseMessage, sseResponse, type SseSource, streamOptions } from "../sse.ts";
import { listQuery } from "./_params.ts";

function requireRun(ctx: Context, id: string) {
  const run = runsDb.getRun(ctx.db, id);
  if (!run) throw notFound("Run", id);
  return run;
}

/** The run of the path (404 when it does not exist) and the validated query parameters. */
function runQuery<S extends z.ZodRawShape>(c: RequestContext, ctx: Context, shape: S) {
  const id = idParam(c);
  requireRun(ctx, id);
  return { id, q: readQuery(c.req.url, z.object(shape)) };
}

/** Run statuses after which no more points or lines come (unless a lost node returns). */
const LIVE_STATUSES = new Set(["QUEUED", "RUNNING"]);

/** A run's streams end once it has finished: `event: end` with its status. */
function runEnd(ctx: Context, id: string): SseSource["end"] {
  return {
    ended: () => {
      const run = runsDb.getRun(ctx.db, id);
      return run && !LIVE_STATUSES.has(run.status) ? { run_id: id, status: run.status } : null;
    },
    subscribe: (recheck) =>
      ctx.bus.subscribe<EventRecord>(topics.events, (e) => {
        if (e.run_id === id && e.type.startsWith("RUN_")) recheck();
      }),
  };
}

const keyList = z.string().max(20_000).transform((s) =>
  s.split(",").map((k) => k.trim()).filter(Boolean)
);

export const runRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/runs",
    scope: "read",
    handler: (c, ctx) => {
      const q = listQuery(c, {
        project: z.string().max(200).optional(),
        experiment: z.string().max(200).optional(),
        status: z.enum(RUN_STATUSES).optional(),
        job_id: z.string().max(200).optional(),
        source: z.enum(["job", "sdk", "import"]).optional(),
      });
      const page = runsDb.listRuns(
        ctx.db,
        {
          project: q.project,
          experiment: q.experiment,
          status: q.status,
          job_id: q.job_id,
          source: q.source,
        },
        q.limit ?? 100,
        q.cursor ? Number(q.cursor) : undefined,
      );
      return c.json({ ...page, items: page.items.map((r) => withPrimaryMetric(ctx, r)) });
    },
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
      const { id, q } = runQuery(c, ctx, {
        keys: keyList.optional(),
        max_points: z.coerce.number().int().min(3).max(MAX_SERIES_POINTS).optional(),
      });
      const keys = metricsDb.listKeySummaries(ctx.db, id).map((k) => ({
        ...k,
        last_value: encodeMetricValue(k.last_value),
      }));
      if (!q.keys?.length) return c.json({ run_id: id, keys });
      const parsed = metricsQuery.safeParse({ runs: [id], keys: q.keys, max_points: q.max_points });
      if (!parsed.success) throw validationError("query", parsed.error);
      const plan = planMetricsQuery(ctx, parsed.data);
      return jsonStream(
        { run_id: id, keys, missing: plan.missing, max_points: plan.maxPoints },
        "series",
        readPlannedSeries(ctx, plan),
      );
    },
  },
  {
    method: "POST",
    path: "/api/runs/metrics:query",
    scope: "read",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, metricsQuery, "metrics query");
      const plan = planMetricsQuery(ctx, body);
      return jsonStream(
        { missing: plan.missing, max_points: plan.maxPoints },
        "series",
        readPlannedSeries(ctx, plan),
      );
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/metrics/points",
    scope: "read",
    handler: (c, ctx) => {
      const { id, q } = runQuery(c, ctx, {
        key: z.string().min(1).max(MAX_NAME_LENGTH),
        cursor: z.string().regex(/^\d{1,16}$/, "must be the next_cursor of the previous page")
          .optional(),
        limit: z.coerce.number().int().min(1).max(MAX_SERIES_POINTS).optional(),
      });
      return c.json(readPointsPage(ctx, id, q.key, q.cursor, q.limit ?? POINTS_PAGE_SIZE));
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
      const { id, q } = runQuery(c, ctx, {
        after_seq: z.coerce.number().int().min(0).optional(),
        limit: z.coerce.number().int().min(1).max(2000).optional(),
      });
      return c.json({ lines: logsDb.readLogs(ctx.db, id, q.after_seq, q.limit ?? 500) });
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
    handler: (c, ctx) => {
      const id = idParam(c);
      requireRun(ctx, id);
      return c.json({ items: checkpointsWithEvaluations(ctx, id), next_cursor: null });
    },
  },
];
