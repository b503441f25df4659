/**
 * The web console: server-rendered pages (routes/), islands hydrated in the browser
 * (islands/), signed-cookie sessions (server/auth/session.ts). Mounted on the same app as the
 * API, so `/api/*` accepts the session cookie too.
 */
import type { Hono } from "hono";
import { isWriteScope } from "../http/route.ts";
import type { AppEnv, RequestContext } from "../http/route.ts";
import type { Context } from "../context.ts";
import { issueSession, randomSessionKey, sessionCookieHeader } from "../auth/session.ts";
import { crossOriginProblem, viaTls } from "../http/same_origin.ts";
import { requestAuth } from "../http/request_auth.ts";
import {
  type ConsoleAssets,
  currentIslands,
  type IslandManifest,
  loadConsoleAssets,
} from "./assets.ts";
import { PAGE_HEADERS, type PageRequest, type PageRoute, renderPage } from "./page.tsx";
import { indexRoutes } from "../../routes/index.tsx";
import { loginRoutes } from "../../routes/login.tsx";
import { logoutRoutes } from "../../routes/logout.tsx";
import { ErrorPage } from "../../components/error_page.tsx";

export { buildIslands, prepareIslands } from "./assets.ts";
export type { IslandManifest, PageRoute };

/** The console's pages. */
export const pageRoutes: PageRoute[] = [...indexRoutes, ...loginRoutes, ...logoutRoutes];

/** Everything the console is told at start; every field optional. */
export interface ConsoleOptions {
  /**
   * Signs session cookies; the same key across restarts keeps people signed in.
   * @default a random key (sessions end with the process)
   */
  sessionKey?: Uint8Array;
  /**
   * Believe `X-Forwarded-Proto: https` from a TLS-terminating proxy in front (Secure cookies,
   * the origin check). Only set this when such a proxy is the only way in.
   * @default false
   */
  trustForwardedProto?: boolean;
  /** The island build to serve. @default whatever current build the checkout has */
  islands?: { manifest: IslandManifest | null; problem: string | null };
}

/** The console settings with every default filled in. */
export interface ResolvedConsole {
  sessionKey: Uint8Array;
  trustForwardedProto: boolean;
  assets: () => ConsoleAssets;
}

export function resolveConsole(opts: ConsoleOptions = {}): ResolvedConsole {
  let assets: ConsoleAssets | null = null;
  return {
    sessionKey: opts.sessionKey ?? randomSessionKey(),
    trustForwardedProto: opts.trustForwardedProto ?? false,
    // Loaded on first use, so API-only tests and tools never read the console's files.
    assets: () => assets ??= loadConsoleAssets(opts.islands ?? currentIslands()),
  };
}

/** The public static route: the stylesheet and island bundles, all content-hashed. */
export const STATIC_ROUTE = { method: "GET", path: "/static/*", scope: "public" } as const;

/** Registers the console's pages and static files on the app. */
export function mountConsole(app: Hono<AppEnv>, ctx: Context, con: ResolvedConsole): void {
  app.get(STATIC_ROUTE.path, (c) => {
    const name = new URL(c.req.url).pathname.slice("/static/".length);
    const file = con.assets().file(name);
    if (!file) return c.text(`No static file ${name}`, 404);
    // Every served name carries its content's hash: a changed file is a new name.
    return new Response(file.body, {
      headers: {
        "content-type": file.type,
        "cache-control": "public, max-age=31536000, immutable",
        "x-content-type-options": "nosniff",
      },
    });
  });
  for (const route of pageRoutes) {
    app.on(route.method, route.path, (c) => servePage(c, ctx, con, route));
  }
}

async function servePage(
  c: RequestContext,
  ctx: Context,
  con: ResolvedConsole,
  route: PageRoute,
): Promise<Response> {
  const req = c.req.raw;
  const url = new URL(req.url);
  const assets = con.assets();
  const tls = viaTls(req, con.trustForwardedProto);
  const render: PageRequest["render"] = (title, body, init) =>
    renderPage(assets, title, body, init);
  if (route.method !== "GET") {
    // Sign-in and sign-out too: a form another site posts must not sign anyone in or out.
    const problem = crossOriginProblem(req, con.trustForwardedProto);
    if (problem) {
      return render(
        "Refused",
        ErrorPage({
          title: "Refused: this form came from another site",
          detail: `The console only accepts forms sent from its own pages (${problem}).`,
        }),
        { status: 403 },
      );
    }
  }
  const { principal } = requestAuth(
    ctx,
    new Request(req.url, {
      // Pages go by the session cookie alone.
      headers: { cookie: req.headers.get("cookie") ?? "" },
    }),
    con.sessionKey,
  );
  if (route.scope === "read" && !principal) {
    const next = url.pathname + url.search;
    const location = next === "/" ? "/login" : `/login?next=${encodeURIComponent(next)}`;
    return new Response(null, { status: 303, headers: { ...PAGE_HEADERS, location } });
  }
  return await route.handler({
    c,
    ctx,
    url,
    principal,
    canWrite: principal ? isWriteScope(principal.scope) : false,
    render,
    redirect: (location, headers) => {
      const h = new Headers(headers);
      h.set("location", location);
      for (const [k, v] of Object.entries(PAGE_HEADERS)) h.set(k, v);
      return new Response(null, { status: 303, headers: h });
    },
    startSession: (tokenId) => {
      const s = issueSession(ctx, con.sessionKey, tokenId);
      return s ? sessionCookieHeader(s.value, { secure: tls, expires: s.expires }) : null;
    },
    endSession: () => sessionCookieHeader(null, { secure: tls }),
  });
}
