/** The sweep routes: start, list, read and cancel (`/api/sweeps…`). */
import { sweepCancel, sweepCreateRequest, sweepListQuery } from "../../../protocol/sweeps.ts";
import { dryRunSweep } from "../../sweeps/dry_run.ts";
import { cancelSweep, createSweep, getSweep, listSweeps } from "../../sweeps/service.ts";
import { readJson, readQuery } from "../body.ts";
import { idParam, principalOf, type RouteDef } from "../route.ts";

export const sweepRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/api/sweeps",
    scope: "write",
    handler: async (c, ctx) => {
      const { dry_run, ...req } = await readJson(c.req.raw, sweepCreateRequest, "sweep");
      const by = principalOf(c).token_id;
      if (dry_run) return c.json(dryRunSweep(ctx, req, by));
      return c.json(createSweep(ctx, req, by), 201);
    },
  },
  {
    method: "GET",
    path: "/api/sweeps",
    scope: "read",
    handler: (c, ctx) => c.json(listSweeps(ctx, readQuery(c.req.url, sweepListQuery))),
  },
  {
    method: "GET",
    path: "/api/sweeps/:id",
    scope: "read",
    handler: (c, ctx) => c.json(getSweep(ctx, idParam(c))),
  },
  {
    method: "POST",
    path: "/api/sweeps/:id/cancel",
    scope: "write",
    handler: async (c, ctx) => {
      // An empty body is allowed: cancel everything.
      const body = c.req.header("content-length") === "0" || !c.req.raw.body
        ? {}
        : await readJson(c.req.raw, sweepCancel, "sweep cancel");
      return c.json(cancelSweep(ctx, idParam(c), principalOf(c).name, body));
    },
  },
];
