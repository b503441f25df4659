/**
 * A chart view's state in the URL (`?metrics=&runs=&smooth=&x=`), so a pasted link opens the
 * same panels, runs, smoothing and axis. `decode(encode(v))` is `v` for every valid view;
 * unknown or malformed parameters fall back to the defaults rather than breaking the page.
 * Pure.
 *
 * @module
 */
import { X_MODES, type XMode } from "./x_axis.ts";

export interface ViewState {
  /** Metric keys drawn, one panel each, in order. */
  metrics: string[];
  /** Runs drawn (empty: the page's default set). */
  runs: string[];
  /** Smoothing weight, 0 to 0.999. */
  smooth: number;
  x: XMode;
}

export const DEFAULT_VIEW: ViewState = { metrics: [], runs: [], smooth: 0, x: "step" };

// Commas separate list items; a key holding one is escaped, as is the escape itself.
const escapeItem = (s: string) => s.replaceAll("~", "~0").replaceAll(",", "~1");
const unescapeItem = (s: string) => s.replaceAll("~1", ",").replaceAll("~0", "~");
const list = (items: string[]) => items.map(escapeItem).join(",");
const unlist = (text: string | null) =>
  text ? text.split(",").filter((s) => s !== "").map(unescapeItem) : [];

/** The view as URL search parameters; defaults are left out to keep links short. */
export function encodeView(v: ViewState): URLSearchParams {
  const p = new URLSearchParams();
  if (v.metrics.length) p.set("metrics", list(v.metrics));
  if (v.runs.length) p.set("runs", list(v.runs));
  if (v.smooth !== DEFAULT_VIEW.smooth) p.set("smooth", String(v.smooth));
  if (v.x !== DEFAULT_VIEW.x) p.set("x", v.x);
  return p;
}

/** The view a URL's search parameters describe; what does not parse takes its default. */
export function decodeView(p: URLSearchParams): ViewState {
  const smooth = Number(p.get("smooth"));
  const x = p.get("x") as XMode;
  return {
    metrics: unlist(p.get("metrics")),
    runs: unlist(p.get("runs")),
    smooth: p.has("smooth") && Number.isFinite(smooth) && smooth >= 0 && smooth <= 0.999
      ? smooth
      : DEFAULT_VIEW.smooth,
    x: X_MODES.includes(x) ? x : DEFAULT_VIEW.x,
  };
}
