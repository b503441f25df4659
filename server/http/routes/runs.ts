import { z } from "zod";
import { metricsQuery, RUN_STATUSES } from "../../../protocol/rest.ts";
import { logs as logsDb, metrics as metricsDb, runs as runsDb } from "../../db/mod.ts";
import { topics } from "../../bus/bus.ts";
import type { Context } from "../../context.ts";
import { getRun, withPrimaryMetric } from "../../runs/service.ts";
import { queryMetrics } from "../../metrics/query.ts";
import { checkpointsWithEvaluations } from "../../evaluations/mod.ts";
import { encodeMetricValue, type LogLine, type StreamedPoint } from "../../../protocol/objects.ts";
import { readJson, readQuery } from "../body.ts";
import { notFound } from "../errors.ts";
import { idParam, type RouteDef } from "../route.ts";
import { type SseMessage, sseResponse } from "../sse.ts";
import { listQuery } from "./_params.ts";

function requireRun(ctx: Context, id: string) {
  const run = runsDb.getRun(ctx.db, id);
  if (!run) throw notFound("Run", id);
  return run;
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
      const id = idParam(c);
      requireRun(ctx, id);
      const q = readQuery(
        c.req.url,
        z.object({
          keys: keyList.optional(),
          max_points: z.coerce.number().int().min(3).max(1_000_000).optional(),
        }),
      );
      const keys = metricsDb.listKeySummaries(ctx.db, id).map((k) => ({
        ...k,
        last_value: encodeMetricValue(k.last_value),
      }));
      const series = q.keys?.length
        ? queryMetrics(ctx, { runs: [id], keys: q.keys, max_points: q.max_points })
        : undefined;
      return c.json({ run_id: id, keys, ...(series ?? {}) });
    },
  },
  {
    method: "POST",
    path: "/api/runs/metrics:query",
    scope: "read",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, metricsQuery, "metrics query");
      return c.json(queryMetrics(ctx, body));
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
      }, { ...ctx.sse, startId: metricsDb.lastPointSeq(ctx.db, id), pageSize: 5000 });
    },
  },
  {
    method: "GET",
    path: "/api/runs/:id/logs",
    scope: "read",
    handler: (c, ctx) => {
      const id = idParam(c);
      requireRun(ctx, id);
      const q = readQuery(
        c.req.url,
        z.object({
          after_seq: z.coerce.number().int().min(0).optional(),
          limit: z.coerce.number().int().min(1).max(2000).optional(),
        }),
      );
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
      }, { ...ctx.sse, startId: logsDb.lastLogSeq(ctx.db, id), pageSize: 500 });
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
