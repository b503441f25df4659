/**
 * Who sent a request: a bearer token (API clients) or a console session cookie (browsers).
 * The bearer header wins when both are present, so API clients behave as they always did.
 */
import { authenticate, type Principal } from "./service.ts";
import { readCookie, SESSION_COOKIE, sessionPrincipal } from "./session.ts";
import type { Context } from "../context.ts";

export interface RequestAuth {
  principal: Principal | null;
  /** How the principal was proved; null when nothing valid was presented. */
  via: "bearer" | "session" | null;
}

export function requestAuth(ctx: Context, req: Request, sessionKey: Uint8Array): RequestAuth {
  const header = req.headers.get("authorization");
  if (header) {
    const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    const principal = token ? authenticate(ctx, token) : null;
    return { principal, via: principal ? "bearer" : null };
  }
  const cookie = readCookie(req.headers.get("cookie"), SESSION_COOKIE);
  const principal = cookie ? sessionPrincipal(ctx, sessionKey, cookie) : null;
  return { principal, via: principal ? "session" : null };
}
