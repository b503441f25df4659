/**
 * A panel legend's state: which runs are hidden and which one the pointer is over. A click
 * hides or shows a run; Ctrl/⌘-click shows that run alone, and on the run already shown
 * alone shows every run again; hovering a run brings it forward and fades the others. Pure.
 *
 * @module
 */

export interface LegendState {
  /** Ids of the runs not drawn. */
  hidden: string[];
  /** The run the pointer is over, drawn above the others. */
  hover: string | null;
}

export const EMPTY_LEGEND: LegendState = { hidden: [], hover: null };

/** The state after a click on `id`; `isolate` when Ctrl or ⌘ was held. */
export function legendClick(
  s: LegendState,
  id: string,
  runs: readonly string[],
  isolate: boolean,
): LegendState {
  if (isolate) {
    const others = runs.filter((r) => r !== id);
    const alone = !s.hidden.includes(id) && others.every((r) => s.hidden.includes(r));
    return { ...s, hidden: alone ? [] : others };
  }
  return {
    ...s,
    hidden: s.hidden.includes(id) ? s.hidden.filter((r) => r !== id) : [...s.hidden, id],
  };
}

/** The state with the pointer over `id` (null: over none). */
export function legendHover(s: LegendState, id: string | null): LegendState {
  return s.hover === id ? s : { ...s, hover: id };
}

/** Whether `id` is drawn. */
export function isVisible(s: LegendState, id: string): boolean {
  return !s.hidden.includes(id);
}

/** How strongly `id` is drawn: faded while another run is hovered. */
export function emphasis(s: LegendState, id: string): "normal" | "front" | "faded" {
  if (s.hover === null || !isVisible(s, s.hover)) return "normal";
  return s.hover === id ? "front" : "faded";
}
