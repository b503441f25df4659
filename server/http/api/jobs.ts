/** The job routes: submit, list, read, cancel and retry (`/api/jobs…`). */
import { jobListQuery, jobSubmitRequest } from "../../../protocol/rest/jobs.ts";
import { dryRunJob } from "../../jobs/dry_run.ts";
import { cancelJob, getJob, listJobs, retryJob, submitJob } from "../../jobs/service.ts";
import { readJson, readQuery } from "../body.ts";
import { idParam, principalOf, type RouteDef } from "../route.ts";

export const jobRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/api/jobs",
    scope: "write",
    handler: async (c, ctx) => {
      const { dry_run, ...body } = await readJson(c.req.raw, jobSubmitRequest, "job submission");
      const by = principalOf(c).token_id;
      if (dry_run) return c.json(dryRunJob(ctx, body, by));
      return c.json(submitJob(ctx, body, "TRAIN", { submitted_by: by }), 201);
    },
  },
  {
    method: "GET",
    path: "/api/jobs",
    scope: "read",
    handler: (c, ctx) => c.json(listJobs(ctx, readQuery(c.req.url, jobListQuery))),
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
