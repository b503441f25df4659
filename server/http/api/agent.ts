/**
 * `GET /api/agent/ws`: an agent's WebSocket, upgraded (unless the connection caps are full)
 * and handed to the gateway with the node its token is bound to.
 */
import { HttpError } from "../errors.ts";
import { principalOf, type RouteDef } from "../route.ts";

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
      // Deno reads each WebSocket message whole (up to its own 64 MiB cap) before the
      // gateway sees it, and has no option to lower that cap: the gateway closes the
      // connection on the first oversize frame, so one connection costs at most one, and
      // the connections are capped (before the upgrade) so the server's cost is bounded.
      const refusal = ctx.agents.connectionRefusal?.(principalOf(c).node_id) ?? null;
      if (refusal) throw new HttpError(429, "TooManyAgentConnections", refusal);
      const { socket, response } = Deno.upgradeWebSocket(c.req.raw, { idleTimeout: 60 });
      ctx.agents.attach(socket, principalOf(c).node_id);
      return response;
    },
  },
];
