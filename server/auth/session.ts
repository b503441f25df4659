/**
 * Console sessions: a signed cookie instead of the token itself, so the browser never holds
 * a secret that also works as a bearer token, and the server keeps no session table.
 *
 * The cookie is `<token id>.<expires, unix seconds>.<signature>`; the signature is an
 * HMAC-SHA256 under the server's session key over the id, the expiry and the token's stored
 * secret hash. So a session
 * - survives a server restart (the key lives in `<data_dir>/session.key`),
 * - ends when its token is deleted, expires or gets a new secret (the row or hash changes),
 * - cannot be forged from a copy of the database (the key is not in it).
 * Signing out clears the cookie in the browser; a copy of the cookie taken before stays valid
 * until it expires (SESSION_TTL_S), because nothing is stored per session.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { tokens as tokensDb } from "../db/mod.ts";
import type { Context } from "../context.ts";
import type { Principal } from "./service.ts";

/** The cookie's name. */
export const SESSION_COOKIE = "gpuctl_session";
/** How long a console session lasts: a week of glancing at it between other work. */
export const SESSION_TTL_S = 7 * 24 * 3600;
const KEY_BYTES = 32;

/** A fresh random key: sessions signed with it end when the process does. */
export function randomSessionKey(): Uint8Array {
  return new Uint8Array(randomBytes(KEY_BYTES));
}

/**
 * The key kept in `path` (hex, mode 0600), created on first use. When the file cannot be
 * written, a random key is returned with `persisted: false`: sessions then end at restart.
 */
export function loadSessionKey(path: string): { key: Uint8Array; persisted: boolean } {
  try {
    const hex = Deno.readTextFileSync(path).trim();
    if (!/^[0-9a-f]{64}$/.test(hex)) {
      throw new Error(`Cannot use the session key in ${path}: expected 64 hex characters`);
    }
    return { key: hexBytes(hex), persisted: true };
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  const key = randomSessionKey();
  try {
    Deno.writeTextFileSync(path, `${bytesHex(key)}\n`, { createNew: true, mode: 0o600 });
    return { key, persisted: true };
  } catch (err) {
    // Another process created it first: use theirs, so both sign alike.
    if (err instanceof Deno.errors.AlreadyExists) return loadSessionKey(path);
    return { key, persisted: false };
  }
}

function signature(key: Uint8Array, tokenId: string, expires: number, secretHash: string) {
  return createHmac("sha256", key).update(`v1|${tokenId}|${expires}|${secretHash}`).digest(
    "base64url",
  );
}

/**
 * The cookie value for a signed-in token and when it expires: SESSION_TTL_S from now, or
 * earlier when the token itself expires earlier.
 */
export function issueSession(
  ctx: Context,
  key: Uint8Array,
  tokenId: string,
): { value: string; expires: Date } | null {
  const row = tokensDb.getToken(ctx.db, tokenId);
  if (!row) return null;
  let expires = Math.floor(ctx.now().getTime() / 1000) + SESSION_TTL_S;
  if (row.expires_at) expires = Math.min(expires, Math.floor(Date.parse(row.expires_at) / 1000));
  return {
    value: `${row.id}.${expires}.${signature(key, row.id, expires, row.secret_hash)}`,
    expires: new Date(expires * 1000),
  };
}

/** The principal of a session cookie; null when it is malformed, forged, expired or revoked. */
export function sessionPrincipal(ctx: Context, key: Uint8Array, value: string): Principal | null {
  const m = /^([a-z0-9]{6,32})\.(\d{1,12})\.([A-Za-z0-9_-]{43})$/.exec(value);
  if (!m) return null;
  const [, tokenId, expiresText, sig] = m;
  const expires = Number(expiresText);
  const now = ctx.now().getTime();
  if (expires * 1000 <= now) return null;
  const row = tokensDb.getToken(ctx.db, tokenId);
  if (!row || row.scope === "agent") return null;
  const want = Buffer.from(signature(key, row.id, expires, row.secret_hash));
  const got = Buffer.from(sig);
  if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
  if (row.expires_at && Date.parse(row.expires_at) <= now) return null;
  return { token_id: row.id, name: row.name, scope: row.scope, node_id: row.node_id ?? null };
}

/** The value of one cookie in a Cookie header. */
export function readCookie(header: string | null, name: string): string | null {
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}

/** The Set-Cookie header of a session (`value` null: the one that clears it). */
export function sessionCookieHeader(
  value: string | null,
  opts: { secure: boolean; expires?: Date },
): string {
  const parts = [`${SESSION_COOKIE}=${value ?? ""}`, "Path=/", "HttpOnly", "SameSite=Strict"];
  if (value === null) parts.push("Max-Age=0");
  else if (opts.expires) parts.push(`Expires=${opts.expires.toUTCString()}`);
  if (opts.secure) parts.push("Secure");
  return parts.join("; ");
}

function hexBytes(hex: string): Uint8Array {
  return new Uint8Array(hex.match(/../g)!.map((b) => parseInt(b, 16)));
}

function bytesHex(bytes: Uint8Array): string {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}
