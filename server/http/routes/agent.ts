import { HttpError } from "../errors.ts";
import type { RouteDef } from "../route.ts";

export const agentRoutes: RouteDef[] = [
  {
    method: "GET",
    path: "/api/agent/ws",
    scope: "agent",
    handler: (c, ctx) => {
      if (!ctx.agents) throw new HttpError(503, "Unavailable", "This server runs no agent gateway");
      if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
        throw new HttpError(
          400,
          "ValidationError",
          "GET /api/agent/ws expects a WebSocket upgrade",
        );
      }
      const { socket, response } = Deno.upgradeWebSocket(c.req.raw, { idleTimeout: 60 });
      ctx.agents.attach(socket);
      return response;
    },
  },
];
