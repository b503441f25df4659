/** `GET /api/health` (public) and `GET /api/auth/whoami`: the caller's token name and scope. */
import { health } from "../../admin/service.ts";
import { whoami } from "../../auth/service.ts";
import { principalOf, type RouteDef } from "../route.ts";

export const authRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/health",
    scope: "public",
    handler: (c) => c.json(health()),
  },
  {
    method: "GET",
    path: "/api/auth/whoami",
    scope: "read",
    handler: (c, ctx) => c.json(whoami(principalOf(c), ctx)),
  },
];
