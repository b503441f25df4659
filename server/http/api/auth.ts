import { SCHEMA_VERSION } from "../../db/mod.ts";
import { principalOf, type RouteDef } from "../route.ts";

/** The version this server reports. */
export const GPUCTL_VERSION = "0.1.0";

export const authRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/health",
    scope: "public",
    handler: (c) => c.json({ ok: true, version: GPUCTL_VERSION, schema_version: SCHEMA_VERSION }),
  },
  {
    method: "GET",
    path: "/api/auth/whoami",
    scope: "read",
    handler: (c) => {
      const p = principalOf(c);
      return c.json({
        name: p.name,
        scope: p.scope,
        token_id: p.token_id,
        can_write: p.scope === "write" || p.scope === "admin",
      });
    },
  },
];
