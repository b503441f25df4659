/**
 * How the console writes numbers, times and statuses, on the server and in islands alike, so
 * a value that updates live reads the same as the one the server rendered (CONSOLE.md: "every
 * number has its context").
 */

const INT = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** `1200` → `1,200`; null → `–`. */
export function fmtInt(n: number | null | undefined): string {
  return n === null || n === undefined || !Number.isFinite(n) ? "–" : INT.format(n);
}

/** A metric value with about four significant digits; NaN/Infinity as words. */
export function fmtMetric(v: number | string | null | undefined): string {
  if (v === null || v === undefined) return "–";
  if (typeof v === "string") return v;
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

/** Seconds as `45s`, `12m 05s`, `1h 04m`, `2d 03h`. */
export function fmtDuration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return "–";
  const s = Math.max(0, Math.round(seconds));
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86400)}d ${pad(Math.floor(s / 3600) % 24)}h`;
}

/** The time between two ISO instants in seconds (to `now` when `to` is null). */
export function secondsBetween(from: string | null, to: string | null, now: number): number | null {
  if (!from) return null;
  return ((to ? Date.parse(to) : now) - Date.parse(from)) / 1000;
}

/** `just now`, `3 min ago`, `in 5 min`, `2 h ago`, `4 d ago`. */
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

/** The absolute time for a hover title: `2026-12-01 19:53:01 UTC`. */
export function fmtAbsolute(iso: string | null | undefined): string {
  return iso ? iso.replace("T", " ").replace(/\.\d+Z$|Z$/, " UTC") : "";
}

/** Bytes as `512 B`, `3.4 MB`, `1.2 GB`. */
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

/** Megabytes as `12.0 GB` or `512 MB`. */
export function fmtMb(mb: number | null | undefined): string {
  if (mb === null || mb === undefined || !Number.isFinite(mb)) return "–";
  return mb >= 1024 ? `${(mb / 1024).toFixed(1)} GB` : `${Math.round(mb)} MB`;
}

/** `1,200 / 5,000` or just `1,200` without a known end. */
export function fmtProgress(step: number | null, max: number | null): string {
  return max ? `${fmtInt(step ?? 0)} / ${fmtInt(max)}` : fmtInt(step);
}

/** step / max_steps between 0 and 1, or null without a known end. */
export function progressFraction(step: number | null, max: number | null): number | null {
  if (!max || step === null) return null;
  return Math.max(0, Math.min(1, (step + 1) / max));
}

/** The status colour class of a job, run, node or evaluation status (CONSOLE.md's colours). */
export function statusTone(status: string): string {
  switch (status) {
    case "RUNNING":
    case "DISPATCHED":
      return "running";
    case "SUCCEEDED":
    case "COMPLETED":
    case "ONLINE":
      return "succeeded";
    case "FAILED":
    case "LOST":
    case "OFFLINE":
      return "failed";
    case "CANCELLED":
    case "STOPPED": // a sweep trial early stopping cancelled
      return "cancelled";
    case "IMPORTED":
      return "imported";
    default:
      return "queued";
  }
}

/** A run's own colour: a hash of its id, the same on every page. */
export function runColor(id: string): string {
  let h = 2166136261;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619);
  return `hsl(${(h >>> 0) % 360} 65% 48%)`;
}

/** ↓ better / ↑ better. */
export function directionArrow(direction: "min" | "max" | null | undefined): string {
  return direction === "min" ? "↓" : direction === "max" ? "↑" : "";
}
