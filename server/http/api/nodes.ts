/** `GET /api/status` (the cluster at a glance), `GET /api/nodes` and `GET /api/nodes/{id}`. */
import { getNode, listNodes } from "../../nodes/service.ts";
import { getStatus } from "../../status/service.ts";
import { idParam, principalOf, type RouteDef } from "../route.ts";

export const nodeRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/status",
    scope: "read",
    handler: (c, ctx) => c.json(getStatus(ctx, principalOf(c).token_id)),
  },
  {
    method: "GET",
    path: "/api/nodes",
    scope: "read",
    handler: (c, ctx) => c.json(listNodes(ctx)),
  },
  {
    method: "GET",
    path: "/api/nodes/:id",
    scope: "read",
    handler: (c, ctx) => c.json(getNode(ctx, idParam(c))),
  },
];
