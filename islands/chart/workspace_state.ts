/**
 * What the Experiment workspace and Compare pages decide from plain data, the same on the
 * server (the first paint) and in the browser (after a click): runs ranked by the primary
 * metric, the runs drawn by default, the panels shown, the links between the two pages, and
 * the Compare table's rows from a comparison. Pure.
 *
 * @module
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { encodeView, type ViewState } from "./view_state.ts";

/** Runs drawn when the URL names none: the best of the ranking. */
export const DEFAULT_DRAWN_RUNS = 10;
/** Panels shown when the URL names none: the primary metric and the next keys. */
export const DEFAULT_PANELS = 5;

/** Run statuses whose curves still grow: panels follow them live. */
export const LIVE_STATUSES: readonly string[] = ["RUNNING", "QUEUED"];

/** A row of the workspace's runs table. */
export interface WorkspaceRow {
  id: string;
  name: string;
  status: string;
  step: number | null;
  max_steps: number | null;
  created_at: string;
  /** Best value of the experiment's primary metric (null: none, or not finite). */
  best: number | null;
  /** Its latest value; the words for a non-finite one. */
  latest: number | string | null;
  live: boolean;
}

/** A run as `GET /api/runs` lists it (the fields the table refreshes). */
export interface ListedRun {
  id: string;
  name: string;
  status: string;
  step: number | null;
  max_steps: number | null;
  created_at: string;
  primary_metric: { key: string; best: number | null; latest: number | string | null } | null;
}

/**
 * The table's rows after a refresh of the runs list: status and progress as listed, best
 * and latest from the run's primary metric when it is the experiment's `primary` (else as
 * they were), runs new to the list included. Not sorted.
 */
export function refreshRows(
  listed: readonly ListedRun[],
  primary: string | null,
  before: readonly WorkspaceRow[],
): WorkspaceRow[] {
  const old = new Map(before.map((r) => [r.id, r]));
  return listed.map((r) => {
    const pm = primary !== null && r.primary_metric?.key === primary ? r.primary_metric : null;
    const was = old.get(r.id);
    return workspaceRow(r, pm ? pm.best : was?.best ?? null, pm ? pm.latest : was?.latest ?? null);
  });
}

/** A run as a row of the table, with its best and latest value of the ranking metric. */
export function workspaceRow(
  r: Omit<ListedRun, "primary_metric">,
  best: number | null,
  latest: number | string | null,
): WorkspaceRow {
  return {
    id: r.id,
    name: r.name,
    status: r.status,
    step: r.step,
    max_steps: r.max_steps,
    created_at: r.created_at,
    best: typeof best === "number" && Number.isFinite(best) ? best : null,
    latest,
    live: LIVE_STATUSES.includes(r.status),
  };
}

/** A run's value of the metric that ranks it (null: none logged, or not finite). */
export interface Ranked {
  id: string;
  best: number | null;
}

/**
 * Runs best first by `best` in the metric's direction; runs without a value keep their
 * order at the end. Without a direction nothing is ranked and the order stays.
 */
export function rankRuns<T extends Ranked>(
  runs: readonly T[],
  direction: MetricDirection | null,
): T[] {
  if (!direction) return runs.slice();
  const sign = direction === "min" ? 1 : -1;
  const valued = runs.filter((r) => r.best !== null && Number.isFinite(r.best));
  const rest = runs.filter((r) => !valued.includes(r));
  // Array.prototype.sort is stable: runs with equal values keep their order.
  return [...valued.sort((a, b) => sign * (a.best! - b.best!)), ...rest];
}

/**
 * `rows` in the order `previous` listed them (rows it did not list at the end, as given), so
 * a table under the pointer does not jump when fresh values re-rank it.
 */
export function keepOrder<T extends { id: string }>(
  rows: readonly T[],
  previous: readonly string[],
): T[] {
  const at = new Map(previous.map((id, i) => [id, i]));
  const known = rows.filter((r) => at.has(r.id)).sort((a, b) => at.get(a.id)! - at.get(b.id)!);
  return [...known, ...rows.filter((r) => !at.has(r.id))];
}

/** The id of the best run of a ranking, or null when none has a value. */
export function bestRunId(ranked: readonly Ranked[]): string | null {
  const top = ranked[0];
  return top && top.best !== null && Number.isFinite(top.best) ? top.id : null;
}

/**
 * The runs to draw: those the URL names that exist, in ranking order; when it names none
 * of them, the first `DEFAULT_DRAWN_RUNS` of the ranking.
 */
export function drawnRuns(asked: readonly string[], ranked: readonly Ranked[]): string[] {
  const wanted = new Set(asked);
  const chosen = ranked.filter((r) => wanted.has(r.id)).map((r) => r.id);
  return chosen.length ? chosen : ranked.slice(0, DEFAULT_DRAWN_RUNS).map((r) => r.id);
}

/**
 * The panels to show, one metric key each: those the URL names that some run has (in the
 * URL's order, once each); when it names none of them, the primary metric, then the other
 * keys (not `sys/` telemetry) in name order, `DEFAULT_PANELS` in all.
 */
export function shownPanels(
  asked: readonly string[],
  keys: readonly string[],
  primary: string | null,
): string[] {
  const known = new Set(keys);
  if (primary) known.add(primary);
  const chosen = [...new Set(asked)].filter((k) => known.has(k));
  if (chosen.length) return chosen;
  const others = [...keys].filter((k) => k !== primary && !k.startsWith("sys/")).sort();
  return [...(primary ? [primary] : []), ...others].slice(0, DEFAULT_PANELS);
}

/** The panels as laid out: the primary metric's on top at full width, the rest in a grid. */
export function panelLayout(
  panels: readonly string[],
  primary: string | null,
): { top: string | null; grid: string[] } {
  const top = primary !== null && panels.includes(primary) ? primary : null;
  return { top, grid: panels.filter((k) => k !== top) };
}

/** Keys the "+ add metric panel" menu offers: the experiment's keys not shown, own keys first. */
export function addablePanels(keys: readonly string[], shown: readonly string[]): string[] {
  const open = keys.filter((k) => !shown.includes(k));
  const own = open.filter((k) => !k.startsWith("sys/")).sort();
  return [...own, ...open.filter((k) => k.startsWith("sys/")).sort()];
}

/** `selected` with `id` checked or unchecked, kept in the ranking's order. */
export function toggleRun(
  selected: readonly string[],
  id: string,
  on: boolean,
  ranked: readonly Ranked[],
): string[] {
  const set = new Set(selected);
  if (on) set.add(id);
  else set.delete(id);
  return ranked.map((r) => r.id).filter((r) => set.has(r));
}

/** The query string (with its `?`, or empty) of a view. */
export function viewQuery(v: ViewState, extra: Record<string, string> = {}): string {
  const p = encodeView(v);
  for (const [k, x] of Object.entries(extra)) p.set(k, x);
  const q = p.toString();
  return q ? `?${q}` : "";
}

/** The Compare page of `runs`, keeping the view's smoothing and x axis. */
export function compareHref(runs: readonly string[], v: Pick<ViewState, "smooth" | "x">): string {
  return `/compare${viewQuery({ metrics: [], runs: [...runs], smooth: v.smooth, x: v.x })}`;
}

/** A run in a comparison, as `GET /api/runs/compare` answers it (the fields the page uses). */
export interface ComparedRunView {
  run_id: string;
  name: string;
  status: string;
  best: number | null;
  best_step: number | null;
  latest: number | string | null;
  steps: number | null;
  duration_s: number | null;
  rank: number | null;
}

/** `GET /api/runs/compare`'s answer, the fields the page uses. */
export interface ComparisonView {
  metric: { key: string; direction: MetricDirection } | null;
  reason: string | null;
  common_keys: string[];
  runs: ComparedRunView[];
  ranking: string[];
  config_diff: { key: string; values: Record<string, unknown> }[];
  summary: string;
}

/** A row of the Compare table: the run and its value of each differing config key. */
export interface CompareRow extends ComparedRunView {
  best_run: boolean;
  config: unknown[];
}

/**
 * The Compare table: the ranked runs best first, then the rest in the order asked; one
 * value per differing config key (`config_diff`'s order), null where a run lacks the key.
 */
export function compareRows(c: ComparisonView): CompareRow[] {
  const byId = new Map(c.runs.map((r) => [r.run_id, r]));
  const ranked = c.ranking.flatMap((id) => byId.get(id) ?? []);
  const rest = c.runs.filter((r) => !c.ranking.includes(r.run_id));
  return [...ranked, ...rest].map((r) => ({
    ...r,
    best_run: c.ranking[0] === r.run_id,
    config: c.config_diff.map((d) => d.values[r.run_id] ?? null),
  }));
}

/** A config value as a table cell shows it: strings bare, everything else as JSON. */
export function configText(v: unknown): string {
  if (v === null || v === undefined) return "–";
  return typeof v === "string" ? v : JSON.stringify(v);
}
