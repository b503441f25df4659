/**
 * ANSI colour codes in log lines, turned into styled text. Training scripts colour their
 * output (tqdm, rich, loggers); a log view should keep the colours without ever treating a
 * line as markup, so a line becomes plain-text segments with a style each, and the style is
 * a set of class names from the stylesheet (no inline styles: the CSP forbids them). Every
 * escape sequence that is not a colour or weight (cursor moves, titles, links, garbage) is
 * dropped; a carriage return keeps what a terminal would show, the text after the last one.
 */

/** The style of a run of text: 16-colour indexes (0–7 normal, 8–15 bright) and weights. */
export interface AnsiStyle {
  fg?: number;
  bg?: number;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
}

/** A run of plain text and its style. */
export interface AnsiSegment {
  text: string;
  style: AnsiStyle;
}

// CSI (ESC [ params final, or the one-byte C1 introducer), OSC (ESC ] … BEL or ESC \), and
// any other ESC with its intermediates and final character; each also when cut off.
const ESCAPES =
  // deno-lint-ignore no-control-regex -- matching escape sequences is the point
  /\x1b\[([0-?]*)[ -/]*([@-~])|\x9b([0-?]*)[ -/]*([@-~])|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*|\x1b[ -/]*[0-~]?/g;
// C0 controls other than tab, DEL and C1 controls: never shown.
// deno-lint-ignore no-control-regex -- removing control characters is the point
const CONTROLS = /[\x00-\x08\x0a-\x1f\x7f-\x9f]/g;

/** Splits a log line into styled plain-text segments. */
export function ansiSegments(line: string): AnsiSegment[] {
  const cr = line.split("\r");
  const shown = cr.findLast((part, i) => part !== "" || i === 0) ?? "";
  const out: AnsiSegment[] = [];
  let style: AnsiStyle = {};
  let at = 0;
  const push = (raw: string) => {
    const text = raw.replace(CONTROLS, "");
    if (text === "") return;
    const last = out.at(-1);
    if (last && sameStyle(last.style, style)) last.text += text;
    else out.push({ text, style });
  };
  for (const m of shown.matchAll(ESCAPES)) {
    push(shown.slice(at, m.index));
    at = m.index + m[0].length;
    const final = m[2] ?? m[4];
    if (final === "m") style = applySgr(style, m[1] ?? m[3] ?? "");
  }
  push(shown.slice(at));
  return out;
}

/** The line with every escape sequence and control character removed. */
export function stripAnsi(line: string): string {
  return ansiSegments(line).map((s) => s.text).join("");
}

function applySgr(current: AnsiStyle, params: string): AnsiStyle {
  // Private or malformed parameter strings (`?`, `<`, `>`) are not SGR: leave the style.
  if (/[<=>?]/.test(params)) return current;
  const codes = params === "" ? [0] : params.split(/[;:]/).map((p) => p === "" ? 0 : Number(p));
  const s: AnsiStyle = { ...current };
  for (let i = 0; i < codes.length; i++) {
    const c = codes[i];
    if (c === 0) {
      for (const k of Object.keys(s) as (keyof AnsiStyle)[]) delete s[k];
    } else if (c === 1) s.bold = true;
    else if (c === 2) s.dim = true;
    else if (c === 3) s.italic = true;
    else if (c === 4) s.underline = true;
    else if (c === 22) {
      delete s.bold;
      delete s.dim;
    } else if (c === 23) delete s.italic;
    else if (c === 24) delete s.underline;
    else if (c >= 30 && c <= 37) s.fg = c - 30;
    else if (c >= 90 && c <= 97) s.fg = c - 90 + 8;
    else if (c === 39) delete s.fg;
    else if (c >= 40 && c <= 47) s.bg = c - 40;
    else if (c >= 100 && c <= 107) s.bg = c - 100 + 8;
    else if (c === 49) delete s.bg;
    else if (c === 38 || c === 48) {
      // Extended colours: 5;n (256 colours, of which the first 16 are the basic ones) or
      // 2;r;g;b (true colour). Only the basic 16 have classes; the others leave the text plain.
      const key = c === 38 ? "fg" : "bg";
      if (codes[i + 1] === 5) {
        const n = codes[i + 2];
        if (Number.isInteger(n) && n >= 0 && n < 16) s[key] = n;
        else delete s[key];
        i += 2;
      } else if (codes[i + 1] === 2) {
        delete s[key];
        i += 4;
      } else {
        break; // malformed: ignore the rest
      }
    }
  }
  return s;
}

function sameStyle(a: AnsiStyle, b: AnsiStyle): boolean {
  return a.fg === b.fg && a.bg === b.bg && !!a.bold === !!b.bold && !!a.dim === !!b.dim &&
    !!a.italic === !!b.italic && !!a.underline === !!b.underline;
}

/** The stylesheet classes of a style; "" for plain text. */
export function ansiClass(style: AnsiStyle): string {
  const c: string[] = [];
  if (style.fg !== undefined) c.push(`ansi-fg-${style.fg}`);
  if (style.bg !== undefined) c.push(`ansi-bg-${style.bg}`);
  if (style.bold) c.push("ansi-bold");
  if (style.dim) c.push("ansi-dim");
  if (style.italic) c.push("ansi-italic");
  if (style.underline) c.push("ansi-underline");
  return c.join(" ");
}

/** One log line with its colours, as text nodes (never markup). */
export function AnsiLine({ line }: { line: string }) {
  return (
    <>
      {ansiSegments(line).map((seg, i) => {
        const cls = ansiClass(seg.style);
        return cls ? <span key={i} class={cls}>{seg.text}</span> : seg.text;
      })}
    </>
  );
}
