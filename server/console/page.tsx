/**
 * The shape of a console page route and the one function that turns a page into a response:
 * the HTML document with the stylesheet, the boot script only when an island was rendered,
 * and the security headers every page carries.
 */
import type { VNode } from "preact";
import { renderToString } from "preact-render-to-string";
import type { Principal } from "../auth/service.ts";
import type { Context } from "../context.ts";
import { IslandsOnPage } from "../../components/island.tsx";
import type { ConsoleAssets } from "./assets.ts";

/**
 * Scripts only from this origin's files, styles only from the stylesheet (no inline styles
 * or scripts anywhere), nothing framed, forms posting only here.
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join("; ");

/** Headers on every console response. */
export const PAGE_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
};

/** What a page handler gets. */
export interface PageRequest {
  /** The request as it arrived. */
  req: Request;
  ctx: Context;
  url: URL;
  /** The signed-in session's principal (always set on pages that need a session). */
  principal: Principal | null;
  /** Whether the session may change things: write controls render only when true. */
  canWrite: boolean;
  /** Renders a page into a full HTML response. */
  render(title: string, body: VNode, init?: { status?: number; headers?: HeadersInit }): Response;
  /** A 303 to `location` (with extra headers, e.g. Set-Cookie). */
  redirect(location: string, headers?: HeadersInit): Response;
  /** Set-Cookie for a new session of `tokenId`; null when the token is gone. */
  startSession(tokenId: string): string | null;
  /** Set-Cookie that ends the session in this browser. */
  endSession(): string;
}

/** One console route. Like the API table, a page cannot exist without declaring who may see it. */
export type PageRoute =
  & {
    method: "GET" | "POST";
    path: string;
    handler: (p: PageRequest) => Response | Promise<Response>;
  }
  & (
    /** `public`: anyone (sign-in); `read`: any signed-in session, else a redirect to /login. */
    | { scope: "public" | "read" }
    /**
     * `write`: a signed-in session whose token may write; a read session gets the refusal page
     * (403) naming `action`, and the handler never runs.
     */
    | { scope: "write"; action: string }
  );

/** Renders `body` into a complete document. */
export function renderPage(
  assets: ConsoleAssets,
  title: string,
  body: VNode,
  init: { status?: number; headers?: HeadersInit } = {},
): Response {
  const islands = { count: 0, names: new Set<string>() };
  const html = renderToString(
    <IslandsOnPage.Provider value={islands}>{body}</IslandsOnPage.Provider>,
  );
  const build = islands.count > 0 ? assets.islands : null;
  const boot = build ? <script type="module" src={`/static/build/${build.boot}`} /> : null;
  // The page's islands and their chunks, fetched and compiled while the page is parsed.
  const preload = build
    ? [...new Set([...islands.names].flatMap((n) => build.preload[n] ?? []))]
    : [];
  const head = renderToString(
    <head>
      <meta charset="utf-8" />
      <meta name="viewport" content="width=device-width, initial-scale=1" />
      <meta name="color-scheme" content="light dark" />
      <title>{title === "gpuctl" ? title : `${title} · gpuctl`}</title>
      <link rel="icon" href="data:," />
      <link rel="stylesheet" href={assets.stylesheetPath} />
      {boot}
      {preload.map((f) => <link key={f} rel="modulepreload" href={`/static/build/${f}`} />)}
    </head>,
  );
  const headers = new Headers(init.headers);
  for (const [k, v] of Object.entries(PAGE_HEADERS)) headers.set(k, v);
  headers.set("content-type", "text/html; charset=utf-8");
  headers.set("cache-control", "no-store");
  return new Response(`<!doctype html><html lang="en">${head}<body>${html}</body></html>`, {
    status: init.status ?? 200,
    headers,
  });
}
