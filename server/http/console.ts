/**
 * The console's HTTP side: its static files, its pages under the route table's rules (a
 * session for `read` pages, a session that may write for `write` pages, same-origin forms),
 * and what a page handler is handed.
 */
import type { Hono } from "hono";
import { isWriteScope, requireScope } from "../auth/require_scope.ts";
import { requestAuth } from "../auth/request_auth.ts";
import { crossOriginProblem, viaTls } from "../auth/same_origin.ts";
import { issueSession, sessionCookieHeader } from "../auth/session.ts";
import { pageRoutes, type ResolvedConsole, STATIC_ROUTE } from "../console/mod.ts";
import { PAGE_HEADERS, type PageRequest, type PageRoute, renderPage } from "../console/page.tsx";
import type { Context } from "../context.ts";
import type { AppEnv, RequestContext } from "./route.ts";
import { ErrorPage } from "../../components/error_page.tsx";
import { errorPage } from "../console/shell.tsx";

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
  if (route.scope !== "public" && !principal) {
    const next = url.pathname + url.search;
    const location = next === "/" ? "/login" : `/login?next=${encodeURIComponent(next)}`;
    return new Response(null, { status: 303, headers: { ...PAGE_HEADERS, location } });
  }
  const page: PageRequest = {
    req,
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
  };
  try {
    if (route.scope === "write") requireScope(principal, "write", route.action);
    return await route.handler(page);
  } catch (err) {
    // A domain error (not found, a conflict, a read session's write) becomes a page that says
    // what happened; anything else is the app's logged 500.
    const shown = principal ? errorPage(page, err) : null;
    if (shown) return shown;
    throw err;
  }
}
