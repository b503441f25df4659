/** Text helpers shared by the webhook formatters. */
import type { EventRecord } from "../../protocol/objects.ts";

const ELLIPSIS = "…";

/** At most `max` UTF-16 units, cut with "…" and never inside a surrogate pair. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - ELLIPSIS.length;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end--; // a high surrogate whose pair would be cut
  return text.slice(0, Math.max(0, end)) + ELLIPSIS;
}

const encoder = new TextEncoder();

/** At most `maxBytes` bytes of UTF-8, cut with "…" between code points. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (encoder.encode(text).length <= maxBytes) return text;
  const budget = maxBytes - encoder.encode(ELLIPSIS).length;
  let out = "";
  let used = 0;
  for (const ch of text) {
    const size = encoder.encode(ch).length;
    if (used + size > budget) break;
    out += ch;
    used += size;
  }
  return out + ELLIPSIS;
}

// Control characters would let a message inject header lines; tabs and the like become spaces.
// deno-lint-ignore no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]+/g;
// deno-lint-ignore no-control-regex
const NON_ASCII = /[^\u0000-\u007f]/;

/**
 * A header value that is plain printable ASCII: unchanged when it already is, else an RFC 2047
 * encoded word (`=?UTF-8?B?…?=`), which ntfy decodes back to the UTF-8 text.
 */
export function asciiHeader(text: string): string {
  const flat = text.replace(CONTROL, " ").trim();
  if (!NON_ASCII.test(flat)) return flat;
  let binary = "";
  for (const byte of encoder.encode(flat)) binary += String.fromCharCode(byte);
  return `=?UTF-8?B?${btoa(binary)}?=`;
}

/** What the event is about, most specific first: `run r-1`, `job j-1`, `node gpu-3` or "". */
export function subjectOf(event: Pick<EventRecord, "run_id" | "job_id" | "node_id">): string {
  if (event.run_id) return `run ${event.run_id}`;
  if (event.job_id) return `job ${event.job_id}`;
  if (event.node_id) return `node ${event.node_id}`;
  return "";
}

/**
 * The console page of the event's run, when both the console and the run are known; the URL
 * is normalised to ASCII (punycode host, percent-encoded path) so it can travel in a header.
 */
export function runLink(event: Pick<EventRecord, "run_id">, consoleUrl?: string): string | null {
  if (!consoleUrl || !event.run_id) return null;
  try {
    return new URL(`${consoleUrl.replace(/\/+$/, "")}/runs/${encodeURIComponent(event.run_id)}`)
      .href;
  } catch {
    return null;
  }
}
