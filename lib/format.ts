/**
 * How gpuctl writes numbers, durations, sizes and times for people: one module for the console
 * (server pages and islands alike), the CLI, MCP summaries, events and webhooks, so every face
 * prints the same value the same way. Dependency-free: islands ship it to the browser.
 */

const INT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/**
 * A number as gpuctl quotes it: whole numbers below a million exactly, others with 4
 * significant digits, very small or large ones in exponent form, and NaN, Infinity and
 * -Infinity spelled the way the API's JSON spells them.
 */
export function fmtNumber(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (!Number.isFinite(v)) return v > 0 ? "Infinity" : "-Infinity";
  const a = Math.abs(v);
  if (Number.isInteger(v) && a < 1e6) return String(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

/** A metric value: a number by fmtNumber, a string as it is, nothing as `empty`. */
export function fmtMetric(v: number | string | null | undefined, empty = "–"): string {
  if (v === null || v === undefined) return empty;
  return typeof v === "string" ? v : fmtNumber(v);
}

/** `1200` → `1,200`; nothing or a non-finite number → `–`. */
export function fmtInt(n: number | null | undefined): string {
  return n === null || n === undefined || !Number.isFinite(n) ? "–" : INT.format(n);
}

/** A fraction as a signed percentage with one decimal: `-40.4%`, `+3%`, `0%`. */
export function fmtPct(fraction: number): string {
  const p = Math.round(fraction * 1000) / 10;
  return `${p > 0 ? "+" : ""}${p}%`;
}

/** Seconds as `45s`, `12m 05s`, `1h 04m`, `2d 03h`; nothing → `–`. */
export function fmtDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, Math.round(seconds));
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86400)}d ${pad(Math.floor(s / 3600) % 24)}h`;
}

/**
 * The seconds between two ISO instants, to `now` (ms since the epoch) when `to` is null; null
 * without a start or with a time that does not parse. Never negative.
 */
export function secondsBetween(from: string | null, to: string | null, now: number): number | null {
  if (!from) return null;
  const start = Date.parse(from);
  const end = to ? Date.parse(to) : now;
  if (!Number.isFinite(start) || !Number.isFinite(end)) return null;
  return Math.max(0, (end - start) / 1000);
}

/** `just now`, `3 min ago`, `in 5 min`, `2 h ago`, `4 d ago`; nothing → `–`. */
export function fmtRelative(iso: string | null | undefined, now: number): string {
  if (!iso) return "–";
  const d = (Date.parse(iso) - now) / 1000;
  const a = Math.abs(d);
  const say = (n: number, unit: string) => (d < 0 ? `${n} ${unit} ago` : `in ${n} ${unit}`);
  if (a < 10) return d < 0 ? "just now" : "in a moment";
  if (a < 60) return say(Math.round(a), "s");
  if (a < 3600) return say(Math.round(a / 60), "min");
  if (a < 86400) return say(Math.round(a / 3600), "h");
  return say(Math.round(a / 86400), "d");
}

/** The absolute time for a hover title or a log line: `2026-12-01 19:53:01 UTC`. */
export function fmtAbsolute(iso: string | null | undefined): string {
  return iso ? iso.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC") : "";
}

/** Bytes as `512 B`, `3.4 MB`, `1.2 GB` (powers of 1000); nothing → `–`. */
export function fmtBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

/** Megabytes (as NVML reports memory) as `12.0 GB` or `512 MB`; nothing → `–`. */
export function fmtMb(mb: number | null | undefined): string {
  if (mb === null || mb === undefined || !Number.isFinite(mb)) return "–";
  return mb >= 1024 ? `${(mb / 1024).toFixed(1)} GB` : `${Math.round(mb)} MB`;
}
