/**
 * What the Experiment workspace (`/experiments/{id}`) and Compare (`/compare?runs=`) pages
 * show, each in one read: the runs, their keys and ranking by the primary metric, the view the
 * URL asks for (panels, runs, smoothing, x axis), and the series of the drawn runs in the
 * panels of the first screen in one batched metrics query per panel width, so the first paint
 * needs no request (the panels below read theirs when scrolled near).
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { ApiSeries } from "../../islands/chart/panel_types.ts";
import { type PackedSeries, packSeries } from "../../islands/chart/packed.ts";
import { decodeView, type ViewState } from "../../islands/chart/view_state.ts";
import {
  type ComparisonView,
  drawnRuns,
  LIVE_STATUSES,
  panelLayout,
  rankRuns,
  shownPanels,
  type WorkspaceRow,
  workspaceRow,
} from "../../islands/chart/workspace_state.ts";
import type { Experiment, Run } from "../../protocol/objects.ts";
import { MAX_QUERY_SERIES } from "../../protocol/rest/metrics.ts";
import type { Context } from "../context.ts";
import { invalidField, notFound, NotFoundError } from "../errors.ts";
import { keyDirection } from "../metrics/primary_metric.ts";
import { queryMetrics } from "../metrics/service.ts";
import { getMetricDefinitions, listExperiments } from "../projects/service.ts";
import { getRun, listMetricKeys, listRuns } from "../runs/service.ts";
import { compareRunsByIds } from "../semantic/service.ts";

/** Points a full-width panel is rendered with (about twice its width in pixels at 1280 px). */
export const FULL_POINTS = 2500;
/**
 * Points a workspace's panels read per pixel of their width: a page of many panels draws one
 * point a pixel (the band keeps each bucket's extremes), half what a single chart reads.
 */
export const WORKSPACE_DENSITY = 1;
/** Points the workspace's full-width panel is rendered with (about 1,200 px at 1280 px). */
export const TOP_POINTS = 1250;
/** Points a panel of the workspace's two-column grid is rendered with (about 590 px). */
export const GRID_POINTS = 600;
/** Runs a workspace lists at most (the newest). */
export const MAX_WORKSPACE_RUNS = 300;
/** Runs one comparison takes at most (as `GET /api/runs/compare`). */
export const MAX_COMPARED_RUNS = 50;

/** A metric key of the experiment and which way is better. */
export interface KeyView {
  key: string;
  direction: MetricDirection | null;
}

/** A row of the workspace's runs table. */
export type WorkspaceRun = WorkspaceRow;

export interface WorkspaceData {
  experiment: Pick<Experiment, "id" | "project" | "name" | "description">;
  primary: { key: string; direction: MetricDirection } | null;
  keys: KeyView[];
  /** Best first by the primary metric. */
  runs: WorkspaceRun[];
  /** More runs exist than the table lists. */
  truncated: boolean;
  /** The view as drawn: the URL's, with defaults where it names nothing that exists. */
  view: ViewState;
  /** The drawn runs' series of the shown panels (of those `seriesKeys` names), packed. */
  series: PackedSeries[];
  /** Panels whose series came with the page (the first screen's); the others fetch their own. */
  seriesKeys: string[];
  /** What the grid's panels were read with. */
  maxPoints: number;
  /** What the full-width panel on top was read with. */
  topMaxPoints: number;
  /** Points the panels read per pixel of their width. */
  density: number;
}

/**
 * The panels a first screen shows (at 1280 × 900: the full-width one on top and the grid's
 * first row; without one on top, the grid's first two rows), in panel order. Only these come
 * with the page; the panels below read their own series when scrolled near. Pure.
 */
export function firstScreenPanels(panels: readonly string[], primary: string | null): string[] {
  const { top, grid } = panelLayout(panels, primary);
  const shown = new Set([...(top ? [top] : []), ...grid.slice(0, top ? 2 : 4)]);
  return panels.filter((k) => shown.has(k));
}

/**
 * The panels whose series one query can carry (`MAX_QUERY_SERIES` runs × keys), in panel
 * order; the rest fetch on mount. Pure.
 */
export function keysForOneQuery(panels: readonly string[], runs: number): string[] {
  if (runs === 0) return [];
  return panels.slice(0, Math.max(0, Math.floor(MAX_QUERY_SERIES / runs)));
}

/** The experiment `id`'s workspace; NotFoundError for an id no experiment has. */
export async function loadWorkspace(
  ctx: Context,
  id: string,
  params: URLSearchParams,
): Promise<WorkspaceData> {
  const exp = listExperiments(ctx, {}).items.find((e) => e.id === id);
  if (!exp) throw notFound("Experiment", id);
  const primary = exp.best_primary
    ? { key: exp.best_primary.key, direction: exp.best_primary.direction }
    : null;
  const page = listRuns(ctx, {
    project: exp.project,
    experiment: exp.name,
    limit: MAX_WORKSPACE_RUNS,
  });
  const definitions = getMetricDefinitions(ctx).items;
  const keySet = new Set<string>();
  const rows = page.items.map((r) => {
    const keys = listMetricKeys(ctx, r.id).keys;
    for (const k of keys) keySet.add(k.key);
    const s = primary ? keys.find((k) => k.key === primary.key) : undefined;
    return s && primary
      ? workspaceRow(r, primary.direction === "min" ? s.min_value : s.max_value, s.last_value)
      : workspaceRow(r, null, null);
  });
  const ranked = rankRuns(rows, primary?.direction ?? null);
  const asked = decodeView(params);
  const keys = [...keySet].sort();
  const view: ViewState = {
    ...asked,
    metrics: shownPanels(asked.metrics, keys, primary?.key ?? null),
    runs: drawnRuns(asked.runs, ranked),
  };
  const seriesKeys = keysForOneQuery(
    firstScreenPanels(view.metrics, primary?.key ?? null),
    view.runs.length,
  );
  // One read per panel width: the full-width panel on top gets twice the grid's points, one
  // a pixel, so neither reads again on mount for the detail its width calls for.
  const { top } = panelLayout(seriesKeys, primary?.key ?? null);
  const read = async (keys: string[], maxPoints: number) =>
    keys.length
      ? (await queryMetrics(ctx, { runs: view.runs, keys, max_points: maxPoints })).series
      : [];
  const series = [
    ...await read(top ? [top] : [], TOP_POINTS),
    ...await read(seriesKeys.filter((k) => k !== top), GRID_POINTS),
  ];
  const scope = { project: exp.project, experiment: exp.name };
  return {
    experiment: { id: exp.id, project: exp.project, name: exp.name, description: exp.description },
    primary,
    keys: keys.map((key) => ({ key, direction: keyDirection(scope, definitions, key) })),
    runs: ranked,
    truncated: page.next_cursor !== null,
    view,
    series: series.map(packSeries),
    seriesKeys,
    maxPoints: GRID_POINTS,
    topMaxPoints: TOP_POINTS,
    density: WORKSPACE_DENSITY,
  };
}

/** A run the Compare page draws. */
export interface ComparedRunRef {
  id: string;
  name: string;
  live: boolean;
}

/** What `/compare` shows, or why it cannot. */
export type CompareData =
  | { kind: "none" }
  | { kind: "one"; id: string }
  | { kind: "unknown"; ids: string[] }
  | {
    kind: "compare";
    /** The runs asked for, in the order asked. */
    runs: ComparedRunRef[];
    comparison: ComparisonView;
    /** The metric drawn and ranked. */
    metric: KeyView;
    /** The runs' primary metric (★ in the menu), when they share one. */
    primary: string | null;
    /** Keys the menu offers: those every run has, and the one drawn. */
    keys: string[];
    view: ViewState;
    series: ApiSeries[];
    maxPoints: number;
  };

/**
 * The comparison `?runs=a,b&metric=` asks for: the semantic layer's ranking and config diff,
 * and the chosen metric's series of every run in one query. No runs, one run, or ids that
 * exist nowhere are answers too (the page says what to do), not errors.
 */
export async function loadCompare(ctx: Context, params: URLSearchParams): Promise<CompareData> {
  const view = decodeView(params);
  const ids = [...new Set(view.runs)];
  if (ids.length === 0) return { kind: "none" };
  if (ids.length > MAX_COMPARED_RUNS) {
    throw invalidField(
      "compare",
      "runs",
      `names ${ids.length} runs; at most ${MAX_COMPARED_RUNS} compare at once`,
    );
  }
  const runs: Run[] = [];
  const unknown: string[] = [];
  for (const id of ids) {
    try {
      runs.push(getRun(ctx, id));
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
      unknown.push(id);
    }
  }
  if (unknown.length) return { kind: "unknown", ids: unknown };
  if (ids.length === 1) return { kind: "one", id: ids[0] };

  const primaries = new Set(runs.map((r) => r.primary_metric?.key ?? null));
  const primary = primaries.size === 1 ? runs[0].primary_metric?.key ?? null : null;
  const asked = params.get("metric")?.trim() || undefined;
  let comparison = compareRunsByIds(ctx, ids, asked);
  if (!comparison.metric && comparison.common_keys.length) {
    // The runs' primary metrics differ: draw a key they all have rather than nothing.
    comparison = compareRunsByIds(ctx, ids, comparison.common_keys[0]);
  }
  const metric = comparison.metric;
  const keys = [...new Set([...comparison.common_keys, ...(metric ? [metric.key] : [])])].sort();
  const series = metric
    ? (await queryMetrics(ctx, { runs: ids, keys: [metric.key], max_points: FULL_POINTS }))
      .series
    : [];
  return {
    kind: "compare",
    runs: runs.map((r) => ({ id: r.id, name: r.name, live: LIVE_STATUSES.includes(r.status) })),
    comparison,
    metric: metric ?? { key: "", direction: null },
    primary,
    keys,
    view: { ...view, metrics: [], runs: ids },
    series,
    maxPoints: FULL_POINTS,
  };
}
