// How the CLI shows data: server text with its control characters removed, tables sized to
// the terminal, colour only where the context allows it, and short forms of times and sizes.

import type { CommandContext } from "./command.ts";
import { fmtDuration, fmtNumber } from "../lib/format.ts";

// CSI and OSC sequences first (so their parameters go too), then any other C0/C1 control.
// deno-lint-ignore no-control-regex -- control characters are what is removed
const ANSI = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-_]?/g;
// deno-lint-ignore no-control-regex -- control characters are what is removed
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

/**
 * Server data made safe for a terminal: escape sequences and control characters removed
 * (a tab becomes a space), so a job's output cannot move the cursor or retitle the window.
 */
export function clean(value: unknown): string {
  if (value === null || value === undefined) return "";
  const text = typeof value === "string" ? value : String(value);
  return text.replace(ANSI, "").replace(/\t/g, " ").replace(CONTROL, "");
}

/** One log line of a job: control characters removed, but a tab kept. */
export function cleanLine(text: string): string {
  return text.replace(ANSI, "").replace(CONTROL, "");
}

/** Colour is for terminals only, and never when NO_COLOR is set (https://no-color.org). */
export function colourWanted(
  stdoutIsTerminal: boolean,
  env: Readonly<Record<string, string | undefined>>,
): boolean {
  return stdoutIsTerminal && !env.NO_COLOR;
}

const COLOURS = {
  red: 31,
  green: 32,
  yellow: 33,
  blue: 34,
  dim: 2,
  bold: 1,
} as const;

export type Colour = keyof typeof COLOURS;

/** `text` in a colour when the context colours output, else as it is. */
export function paint(ctx: Pick<CommandContext, "color">, colour: Colour, text: string): string {
  return ctx.color ? `\x1b[${COLOURS[colour]}m${text}\x1b[0m` : text;
}

/** The colour of a job, run or node status, or of a severity. */
export function statusColour(status: string): Colour | null {
  switch (status) {
    case "SUCCEEDED":
    case "ONLINE":
    case "IMPORTED":
    case "info":
      return "green";
    case "FAILED":
    case "LOST":
    case "OFFLINE":
    case "critical":
      return "red";
    case "QUEUED":
    case "DISPATCHED":
    case "warning":
      return "yellow";
    case "RUNNING":
      return "blue";
    case "CANCELLED":
      return "dim";
    default:
      return null;
  }
}

/** A status word, coloured by what it means. */
export function paintStatus(ctx: Pick<CommandContext, "color">, status: string): string {
  const colour = statusColour(status);
  return colour ? paint(ctx, colour, clean(status)) : clean(status);
}

/** A column of a table: its heading and how its cells read. */
export interface Column<T> {
  header: string;
  cell: (row: T) => string;
  /** Right-aligned (numbers). */
  right?: boolean;
  /** May be cut to make the table fit (names, messages); others keep their width. */
  flex?: boolean;
}

/** The first columns of a job or run list: id, name and status. */
export function identityColumns<T extends { id: string; name: string; status: string }>(
  ctx: Pick<CommandContext, "color">,
): Column<T>[] {
  return [
    { header: "ID", cell: (x) => clean(x.id) },
    { header: "NAME", cell: (x) => clean(x.name), flex: true },
    { header: "STATUS", cell: (x) => paintStatus(ctx, x.status) },
  ];
}

// Printable width, not counting colour codes (which `clean` has already removed from data).
// deno-lint-ignore no-control-regex -- colour codes are what is skipped
const width = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, "").length;

function cut(s: string, w: number): string {
  if (width(s) <= w) return s;
  // Cells are cleaned text (no codes) when cut: only flexible columns are cut.
  return w <= 1 ? s.slice(0, w) : `${s.slice(0, w - 1)}…`;
}

/**
 * A table as lines: a header and one line per row, columns two spaces apart. Given a width
 * (the terminal's), flexible columns are cut, widest first, until the table fits.
 */
export function table<T>(rows: readonly T[], columns: Column<T>[], maxWidth?: number): string[] {
  const cells = rows.map((r) => columns.map((c) => c.cell(r)));
  const widths = columns.map((c, i) =>
    Math.max(width(c.header), ...cells.map((row) => width(row[i])))
  );
  if (maxWidth !== undefined) {
    const total = () => widths.reduce((a, b) => a + b, 0) + 2 * (columns.length - 1);
    // Cut the widest flexible column first, to 8 characters, then, if need be, to 3.
    for (const floor of [8, 3]) {
      while (total() > maxWidth) {
        let widest = -1;
        columns.forEach((c, i) => {
          if (c.flex && widths[i] > floor && (widest === -1 || widths[i] > widths[widest])) {
            widest = i;
          }
        });
        if (widest === -1) break;
        widths[widest] = Math.max(floor, widths[widest] - (total() - maxWidth));
      }
    }
  }
  const line = (values: string[]) =>
    values.map((v, i) => {
      const text = columns[i].flex ? cut(v, widths[i]) : v;
      const pad = " ".repeat(Math.max(0, widths[i] - width(text)));
      return columns[i].right ? pad + text : i === values.length - 1 ? text : text + pad;
    }).join("  ").trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)];
}

/** Prints a table, or `empty` when there are no rows. */
export function printTable<T>(
  ctx: CommandContext,
  rows: readonly T[],
  columns: Column<T>[],
  empty: string,
): void {
  if (rows.length === 0) {
    ctx.io.out(empty);
    return;
  }
  for (const l of table(rows, columns, ctx.columns)) ctx.io.out(l);
}

/** Words into lines of at most `width` characters (a longer word gets a line of its own). */
export function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = "";
  for (const word of text.split(" ")) {
    if (line && line.length + 1 + word.length > Math.max(width, 20)) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  return [...lines, line];
}

/**
 * Prints `key: value` lines, keys aligned, long values wrapped to the terminal's width under
 * their first line; empty values are left out.
 */
export function printFields(ctx: CommandContext, fields: [string, string][]): void {
  const shown = fields.filter(([, v]) => v !== "");
  const w = Math.max(...shown.map(([k]) => k.length));
  for (const [k, v] of shown) {
    const lines = ctx.columns ? wrap(v, ctx.columns - w - 3) : [v];
    lines.forEach((line, i) => ctx.io.out(`${(i === 0 ? `${k}:` : "").padEnd(w + 1)} ${line}`));
  }
}

/** How long ago an ISO time was: `12s`, `5m`, `3h`, `2d` (empty for null). */
export function ago(iso: string | null | undefined, now: number): string {
  if (!iso) return "";
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  return `${duration(s)} ago`;
}

/** Seconds as gpuctl writes a duration (lib/format.ts): `45s`, `12m 05s`, `3h 05m`, `2d 04h`. */
export const duration = (seconds: number): string => fmtDuration(seconds);

/** A metric value for a table, as gpuctl writes numbers (lib/format.ts). */
export function metric(value: unknown): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "string") return clean(value);
  if (typeof value !== "number") return clean(JSON.stringify(value));
  return fmtNumber(value);
}

/** A progress bar `[#####.....]  50% 500/1000` fitting in `columns`. */
export function progressBar(step: number, max: number, columns = 80): string {
  const fraction = Math.min(1, Math.max(0, step / max));
  const label = ` ${String(Math.floor(fraction * 100)).padStart(3)}% ${step}/${max}`;
  const inner = Math.max(10, Math.min(50, columns - label.length - 3));
  const full = Math.round(fraction * inner);
  return `[${"#".repeat(full)}${".".repeat(inner - full)}]${label}`;
}

/**
 * Prints a list answer: with `json` the API's page unchanged, else its items as a table and,
 * when there are more, the command line that fetches the next page.
 */
export function printPage<T>(
  ctx: CommandContext,
  json: boolean | undefined,
  page: { items: T[]; next_cursor?: string | null },
  columns: Column<T>[],
  empty: string,
  command?: string,
): void {
  if (json) {
    ctx.io.out(JSON.stringify(page));
    return;
  }
  printTable(ctx, page.items, columns, empty);
  if (page.next_cursor && command) ctx.io.out(`… more: ${command} --cursor ${page.next_cursor}`);
}
