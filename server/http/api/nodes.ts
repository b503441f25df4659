import { nodes as nodesDb } from "../../db/mod.ts";
import { notFound } from "../../errors.ts";
import { idParam, type RouteDef } from "../route.ts";

export const nodeRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/nodes",
    scope: "read",
    handler: (c, ctx) => c.json({ items: nodesDb.listNodes(ctx.db), next_cursor: null }),
  },
  {
    method: "GET",
    path: "/api/nodes/:id",
    scope: "read",
    handler: (c, ctx) => {
      const node = nodesDb.getNode(ctx.db, idParam(c));
      if (!node) throw notFound("Node", idParam(c));
      return c.json(node);
    },
  },
];
