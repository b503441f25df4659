import { backupDatabase } from "../../db/mod.ts";
import type { RouteDef } from "../route.ts";

export const adminRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/api/admin/backup",
    scope: "admin",
    handler: async (c, ctx) => c.json(await backupDatabase(ctx.db, ctx.backupDir, ctx.now()), 201),
  },
];
