/**
 * Webhook signatures: HMAC-SHA256 over the timestamp and the body, made for `json` hooks and
 * checked by receivers within a tolerance.
 */
import { createHmac, timingSafeEqual } from "node:crypto";

/** The header carrying the Unix seconds the signature was made at. */
export const TIMESTAMP_HEADER = "X-Gpuctl-Timestamp";
/** The header carrying `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`. */
export const SIGNATURE_HEADER = "X-Gpuctl-Signature";
/** Signatures older (or newer) than this many seconds are refused by `verifySignature`. */
export const SIGNATURE_TOLERANCE_S = 300;

/** `sha256=<hex>` over `"<timestamp>.<body>"`: the timestamp is signed so a replay shows. */
export function signBody(secret: string, timestamp: number | string, body: string): string {
  const mac = createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex");
  return `sha256=${mac}`;
}

/** How `verifySignature` judges the timestamp; both fields optional. */
export interface VerifyOptions {
  /** The receiver's clock. @default the current time */
  now?: Date;
  /** Seconds the timestamp may lie from `now`. @default 300 (`SIGNATURE_TOLERANCE_S`) */
  toleranceS?: number;
}

/**
 * For receivers: whether `signature` (the `X-Gpuctl-Signature` header) signs `body` (the raw
 * request body, not re-serialised) at `timestamp` (the `X-Gpuctl-Timestamp` header) with
 * `secret`, and the timestamp lies within the tolerance of `now`. Compares in constant time.
 */
export function verifySignature(
  secret: string,
  timestamp: string | number,
  body: string,
  signature: string,
  opts: VerifyOptions = {},
): boolean {
  const ts = typeof timestamp === "number" ? timestamp : Number(timestamp);
  if (!Number.isInteger(ts)) return false;
  const nowS = Math.floor((opts.now ?? new Date()).getTime() / 1000);
  if (Math.abs(nowS - ts) > (opts.toleranceS ?? SIGNATURE_TOLERANCE_S)) return false;
  const expected = new TextEncoder().encode(signBody(secret, timestamp, body));
  const given = new TextEncoder().encode(signature);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
