/**
 * The web console: server-rendered pages (routes/), islands hydrated in the browser
 * (islands/), signed-cookie sessions (server/auth/session.ts). Mounted on the same app as the
 * API, so `/api/*` accepts the session cookie too.
 */
import { randomSessionKey } from "../auth/session.ts";
import {
  type ConsoleAssets,
  currentIslands,
  type IslandManifest,
  loadConsoleAssets,
} from "./assets.ts";
import type { PageRoute } from "./page.tsx";

export { buildIslands, prepareIslands } from "./assets.ts";
export type { IslandManifest, PageRoute };

/** The console's pages: routes/_manifest.ts, generated from routes/ by `deno task build`. */
export { pageRoutes } from "../../routes/_manifest.ts";

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
