import { z } from "zod";
import { JOB_STATUSES, jobSubmission } from "../../../protocol/rest.ts";
import { jobs as jobsDb } from "../../db/mod.ts";
import { cancelJob, getJob, retryJob, submitJob } from "../../jobs/service.ts";
import { readJson } from "../body.ts";
import { idParam, principalOf, type RouteDef } from "../route.ts";
import { listQuery } from "./_params.ts";

export const jobRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/api/jobs",
    scope: "write",
    handler: async (c, ctx) => {
      const body = await readJson(c.req.raw, jobSubmission, "job submission");
      return c.json(submitJob(ctx, body), 201);
    },
  },
  {
    method: "GET",
    path: "/api/jobs",
    scope: "read",
    handler: (c, ctx) => {
      const q = listQuery(c, {
        status: z.enum(JOB_STATUSES).optional(),
        project: z.string().max(200).optional(),
        experiment: z.string().max(200).optional(),
        node_id: z.string().max(200).optional(),
      });
      return c.json(jobsDb.listJobs(
        ctx.db,
        {
          status: q.status,
          project: q.project,
          experiment: q.experiment,
          node_id: q.node_id,
        },
        q.limit ?? 100,
        q.cursor ? Number(q.cursor) : undefined,
      ));
    },
  },
  {
    method: "GET",
    path: "/api/jobs/:id",
    scope: "read",
    handler: (c, ctx) => c.json(getJob(ctx, idParam(c))),
  },
  {
    method: "POST",
    path: "/api/jobs/:id/cancel",
    scope: "write",
    handler: (c, ctx) => c.json(cancelJob(ctx, idParam(c), principalOf(c).name)),
  },
  {
    method: "POST",
    path: "/api/jobs/:id/retry",
    scope: "write",
    handler: (c, ctx) => c.json(retryJob(ctx, idParam(c), principalOf(c).name)),
  },
];
