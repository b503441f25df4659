/**
 * The token format `gpc_<id>_<secret>`: making one, splitting it, hashing and comparing its
 * secret in constant time, and which scope may call what.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Scope } from "../../protocol/vocabulary.ts";

/** Every token starts with this, so it is recognisable in a leaked file or a secret scanner. */
export const TOKEN_PREFIX = "gpc_";
const TOKEN_PATTERN = /^gpc_([a-z0-9]{6,32})_([A-Za-z0-9]{20,128})$/;

/** A token split into the id that finds its row and the secret that proves it. */
export interface ParsedToken {
  id: string;
  secret: string;
}

/** Makes a new token `gpc_<id>_<secret>` and the hash that is stored instead of it. */
export function generateToken(): { token: string; id: string; hash: string } {
  const id = randomString(10, "abcdefghijklmnopqrstuvwxyz0123456789");
  const secret = randomString(
    40,
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
  );
  return { token: `${TOKEN_PREFIX}${id}_${secret}`, id, hash: hashSecret(secret) };
}

/** Splits a token into id and secret; null when it does not have the token shape. */
export function parseToken(token: string): ParsedToken | null {
  const m = TOKEN_PATTERN.exec(token);
  return m ? { id: m[1], secret: m[2] } : null;
}

/** The SHA-256 of a secret, hex. Secrets are random, so no salt or slow hash is needed. */
export function hashSecret(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

/** Compares a presented secret with a stored hash in constant time. */
export function secretMatches(secret: string, storedHash: string): boolean {
  const a = Buffer.from(hashSecret(secret), "hex");
  const b = Buffer.from(storedHash, "hex");
  return a.length === b.length && timingSafeEqual(a, b);
}

const SCOPE_RANK: Record<Exclude<Scope, "agent">, number> = { read: 1, write: 2, admin: 3 };

/** Whether a token of scope `have` may call a route that needs `need`. */
export function scopeAllows(have: Scope, need: Scope): boolean {
  // The agent scope is a separate lane: agent tokens reach only agent routes, and user
  // tokens never reach them, however high their rank.
  if (need === "agent" || have === "agent") return have === need;
  return SCOPE_RANK[have] >= SCOPE_RANK[need];
}

function randomString(length: number, alphabet: string): string {
  // Rejection sampling keeps every character equally likely.
  const out: string[] = [];
  const limit = 256 - (256 % alphabet.length);
  while (out.length < length) {
    for (const b of randomBytes(length * 2)) {
      if (b < limit && out.length < length) out.push(alphabet[b % alphabet.length]);
    }
  }
  return out.join("");
}
