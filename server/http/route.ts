/**
 * `RouteDef`, one row of the route table (method, path, scope, handler), and what a handler
 * reads off its request: the principal, the `:id`.
 */
import type { Context as HonoContext } from "hono";
import type { Scope } from "../../protocol/vocabulary.ts";
import type { Principal } from "../auth/service.ts";
import type { Context } from "../context.ts";

/** Variables the middleware puts on each request. */
export interface AppEnv {
  Variables: {
    principal: Principal | null;
  };
}

export type RequestContext = HonoContext<AppEnv>;

/** Who may call a route: a token of at least this scope, or anyone (`public`). */
export type RouteScope = Scope | "public";

/** One API route. Routes are only registered through this table: a route without a scope cannot exist. */
export interface RouteDef {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  scope: RouteScope;
  handler: (c: RequestContext, ctx: Context) => Response | Promise<Response>;
}

/** The principal of a request that passed its route's scope check. */
export function principalOf(c: RequestContext): Principal {
  const p = c.get("principal");
  if (!p) throw new Error("principalOf() called on a public route");
  return p;
}

/** The `:id` path parameter of the matched route. */
export function idParam(c: RequestContext): string {
  return c.req.param("id") ?? "";
}
