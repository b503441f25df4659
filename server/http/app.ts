/**
 * `createApp`: the HTTP app over the services — the API and `/mcp` behind one guard (route
 * scopes, tokens and sessions, same origin), the console, and error answers with their status.
 */
import { Hono, type MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { TrieRouter } from "hono/router/trie-router";
import { requireScope } from "../auth/require_scope.ts";
import { type ConsoleOptions, pageRoutes, resolveConsole, STATIC_ROUTE } from "../console/mod.ts";
import { mountConsole } from "./console.ts";
import { requestAuth } from "../auth/request_auth.ts";
import { changesState, crossOriginProblem } from "../auth/same_origin.ts";
import type { Context } from "../context.ts";
import { errorBody, errorResponseOf, HttpError } from "./errors.ts";
import { quoted } from "../errors.ts";
import type { AppEnv, RouteDef } from "./route.ts";
import { apiRoutes } from "./api/mod.ts";
import { SQLITE_FULL, sqliteErrorCode } from "../db/mod.ts";
import { mcpRoutes } from "../../mcp/http.ts";

/** The app: the request handler, and the table of routes it serves (for the scope walk). */
export interface App {
  fetch: (req: Request) => Promise<Response>;
  routes: readonly RouteDef[];
  /** The console's pages and static files, with who may see them. */
  pages: readonly { method: string; path: string; scope: "public" | "read" | "write" }[];
  /** Every method and path Hono has registered, middleware included. */
  registered: () => { method: string; path: string }[];
}

/** What the app is told beyond the context; every field optional. */
export interface AppOptions {
  /** Sessions and assets of the web console. @default see ConsoleOptions */
  console?: ConsoleOptions;
}

/**
 * The methods the route table serves on a path (HEAD wherever GET), for the `Allow` header
 * of a 405; none when no route has the path. Matched by Hono's own router, so a path the
 * app would route under another method is recognised with the same rules.
 */
function allowedMethods(routes: readonly RouteDef[]): (path: string) => string[] {
  const router = new TrieRouter<RouteDef["method"]>();
  // Registered under every method, so one match finds a path's routes whatever they serve.
  for (const r of routes) router.add("ALL", r.path, r.method);
  return (path) => {
    const methods = new Set(router.match("GET", path)[0].map(([method]) => method));
    return ["GET", "HEAD", "POST", "PUT", "DELETE"].filter((m) =>
      methods.has(m as RouteDef["method"]) || (m === "HEAD" && methods.has("GET"))
    );
  };
}

/** Builds the HTTP app over the services; listening on a port is main.ts's job. */
export function createApp(
  ctx: Context,
  extraRoutes: RouteDef[] = [],
  options: AppOptions = {},
): App {
  const routes = [...apiRoutes, ...mcpRoutes, ...extraRoutes];
  const con = resolveConsole(options.console);
  const scopes = new Map(routes.map((r) => [`${r.method} ${r.path}`, r.scope]));
  const allowed = allowedMethods(routes);
  const app = new Hono<AppEnv>();

  app.use("*", async (c, next) => {
    const started = performance.now();
    await next();
    // Never the query string (it may carry ids a user considers private) or any header.
    const path = new URL(c.req.url).pathname;
    if (c.res.status >= 500) {
      ctx.log.error("request failed", { method: c.req.method, path, status: c.res.status });
    } else if (c.res.status >= 400 && c.res.status !== 401 && c.res.status !== 404) {
      ctx.log.info("request refused", {
        method: c.req.method,
        path,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      });
    }
  });

  // The API and the MCP endpoint (`/mcp`, which serves tools over the same services) share one
  // guard: the route table's scopes, bearer tokens and sessions, the same-origin rule.
  const guard: MiddlewareHandler<AppEnv> = async (c, next) => {
    // Deny by default: the matched route must be one declared in the table with a scope.
    const handlers = matchedRoutes(c).filter((r) => r.method !== "ALL");
    const declared = handlers.length > 0 &&
      handlers.every((r) => scopes.get(`${r.method} ${r.path}`) !== undefined);
    if (handlers.length > 0 && !declared) {
      throw new HttpError(
        403,
        "RouteScopeMissing",
        `${c.req.method} ${c.req.path} declares no scope: refused`,
      );
    }
    const auth = requestAuth(ctx, c.req.raw, con.sessionKey);
    if (auth.via === "session" && changesState(c.req.raw)) {
      // A browser sends the cookie whatever page asks it to; only our own pages may act on it.
      const problem = crossOriginProblem(c.req.raw, con.trustForwardedProto);
      if (problem) {
        throw new HttpError(
          403,
          "CrossOriginRefused",
          `${c.req.method} ${c.req.path} with a console session must come from this server's ` +
            `own pages: ${problem}`,
        );
      }
    }
    c.set("principal", auth.principal);
    await next();
  };
  app.use("/api/*", guard);
  app.use("/mcp", guard);

  for (const r of routes) {
    app.on(r.method, r.path, async (c) => {
      if (r.scope !== "public") requireScope(c.get("principal"), r.scope, `${r.method} ${r.path}`);
      return await r.handler(c, ctx);
    });
  }

  mountConsole(app, ctx, con);

  app.notFound((c) => {
    const path = new URL(c.req.url).pathname;
    const allow = allowed(path);
    if (allow.length > 0) {
      c.header("Allow", allow.join(", "));
      return c.json(
        errorBody(
          "MethodNotAllowed",
          `${c.req.method} is not allowed on ${quoted(path)}: it takes ${allow.join(", ")}`,
        ),
        405,
      );
    }
    return c.json(errorBody("NotFound", `No route for ${c.req.method} ${quoted(path)}`), 404);
  });
  app.onError((err, c) => {
    const known = errorResponseOf(err);
    if (known) return c.json(known.body, known.status as 400);
    ctx.log.error("unhandled error", {
      method: c.req.method,
      path: new URL(c.req.url).pathname,
      error: String(err?.stack ?? err),
    });
    if (sqliteErrorCode(err) === SQLITE_FULL) {
      // Nothing was written (each request is one transaction); clients may send it again.
      return c.json(
        errorBody("StorageFull", "The server's disk is full: nothing was stored; retry later"),
        507,
      );
    }
    return c.json(errorBody("InternalError", "The server failed to handle this request"), 500);
  });

  return {
    fetch: async (req) => await app.fetch(req),
    routes,
    pages: [
      ...pageRoutes.map(({ method, path, scope }) => ({ method, path, scope })),
      STATIC_ROUTE,
    ],
    registered: () => app.routes.map((r) => ({ method: r.method, path: r.path })),
  };
}
