/** `POST /api/admin/backup`: an online backup of the store, for an admin token. */
import { createBackup } from "../../admin/service.ts";
import type { RouteDef } from "../route.ts";

export const adminRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/api/admin/backup",
    scope: "admin",
    handler: async (c, ctx) => c.json(await createBackup(ctx), 201),
  },
];
