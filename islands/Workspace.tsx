/**
 * An experiment's workspace: the primary metric's panel on top, the other metrics' panels
 * in a grid, one smoothing slider and one x-axis switch for all of them, and the runs table
 * whose checkboxes decide which runs the panels draw (in the runs' own colours). Panels,
 * runs, smoothing and axis live in the URL (`history.replaceState`, no reload), so a copied
 * link opens the same view. The table's status and progress follow the runs while any runs.
 */
import type { MetricDirection } from "../protocol/vocabulary.ts";
import { useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import ChartPanel from "./ChartPanel.tsx";
import { directionArrow, fmtMetric, runColor } from "./_format.ts";
import { type LiveEvent, useJson, useNow } from "./_live.ts";
import { ProgressCell, RelTime, RunNameCell, StatusBadge } from "./_ui.tsx";
import type { PackedSeries } from "./chart/packed.ts";
import { firstReads } from "./chart/read_batch.ts";
import type { PanelRun } from "./chart/panel_types.ts";
import type { ViewState } from "./chart/view_state.ts";
import {
  addablePanels,
  bestRunId,
  compareHref,
  keepOrder,
  type ListedRun,
  panelLayout,
  rankRuns,
  refreshRows,
  toggleRun,
  viewQuery,
  type WorkspaceRow,
} from "./chart/workspace_state.ts";
import { useUrlFollows } from "./chart/url_follow.ts";
import { SmoothSlider, XSwitch } from "./chart/view_controls.tsx";
import type { XMode } from "./chart/x_axis.ts";

export interface WorkspaceProps {
  primary: { key: string; direction: MetricDirection } | null;
  keys: { key: string; direction: MetricDirection | null }[];
  /** Best first by the primary metric. */
  runs: WorkspaceRow[];
  view: ViewState;
  /** Packed: a page's HTML carries them at about half the size of their JSON. */
  series: PackedSeries[];
  /** Panels `series` holds; the others fetch their own. */
  seriesKeys: string[];
  /** What the grid's panels' `series` were read with. */
  maxPoints: number;
  /** What the full-width panel's were read with. */
  topMaxPoints: number;
  /** Points the panels read per pixel of their width (`ChartPanel`'s `density`). */
  density: number;
  /** `GET /api/runs` filters of the experiment's runs, for the table's refresh. */
  runsQuery: string;
  now: number;
}

const changes = (e: LiveEvent) => e.type.startsWith("RUN_");

export default function Workspace(p: WorkspaceProps) {
  const [metrics, setMetrics] = useState<string[]>(p.view.metrics);
  const [selected, setSelected] = useState<string[]>(p.view.runs);
  const [smooth, setSmooth] = useState(p.view.smooth);
  const [x, setX] = useState<XMode>(p.view.x);
  const [adding, setAdding] = useState("");
  const now = useNow(p.now);
  // The panels that asked for their series in this commit (their layout effects ran first)
  // ask now, in one query, before the render their effects queued draws the panels the page
  // gave series: the answer is on its way while they draw.
  useLayoutEffect(() => firstReads.flush());

  const anyLive = p.runs.some((r) => r.live);
  const listed = useJson<{ items: ListedRun[] } | null>(`/api/runs?${p.runsQuery}`, null, {
    refreshOn: changes,
    everyMs: anyLive ? 5_000 : undefined,
  });
  const ranked = useMemo(
    () =>
      listed
        ? rankRuns(
          refreshRows(listed.items, p.primary?.key ?? null, p.runs),
          p.primary?.direction ?? null,
        )
        : p.runs,
    [listed],
  );
  // Rows under the pointer stay put; they re-rank when it leaves.
  const [pointerOver, setPointerOver] = useState(false);
  const shownOrder = useRef(ranked.map((r) => r.id));
  const rows = pointerOver ? keepOrder(ranked, shownOrder.current) : ranked;
  shownOrder.current = rows.map((r) => r.id);

  // The URL follows the view once someone changes it; the first paint's URL stays as typed.
  useUrlFollows(viewQuery({ metrics, runs: selected, smooth, x }), smooth);

  // The same arrays from render to render while nothing in them changes, so a panel sees
  // new runs or series only when there are some.
  const drawnList: PanelRun[] = selected.flatMap((id) => {
    const r = rows.find((x) => x.id === id);
    return r ? [{ id, label: r.name, color: runColor(id), live: r.live }] : [];
  });
  const drawnKey = JSON.stringify(drawnList);
  const drawn = useMemo(() => drawnList, [drawnKey]);
  const seriesOf = useMemo(() => {
    const m = new Map<string, PackedSeries[]>();
    for (const k of p.seriesKeys) m.set(k, p.series.filter((s) => s.key === k));
    return m;
  }, []);
  const direction = (key: string) => p.keys.find((k) => k.key === key)?.direction ?? null;
  const primaryKey = p.primary?.key ?? null;
  const { top, grid } = panelLayout(metrics, primaryKey);
  const addable = addablePanels(p.keys.map((k) => k.key), metrics);
  const best = bestRunId(ranked);

  const panel = (key: string, tall: boolean) => (
    <ChartPanel
      key={key}
      metric={key}
      direction={direction(key)}
      primary={key === primaryKey}
      runs={drawn}
      series={seriesOf.get(key)}
      maxPoints={tall ? p.topMaxPoints : p.maxPoints}
      density={p.density}
      smooth={smooth}
      x={x}
      tall={tall}
      onSmooth={setSmooth}
      onX={setX}
      onRemove={() => setMetrics(metrics.filter((k) => k !== key))}
    />
  );

  return (
    <div class="workspace">
      <div class="workspace-controls">
        <SmoothSlider value={smooth} onChange={setSmooth} />
        <XSwitch value={x} onChange={setX} />
        <form
          class="add-panel"
          onSubmit={(e) => {
            e.preventDefault();
            if (adding && !metrics.includes(adding)) setMetrics([...metrics, adding]);
            setAdding("");
          }}
        >
          <label class="sr-only" for="add-metric">Metric</label>
          <select
            id="add-metric"
            name="metric"
            value={adding}
            disabled={!addable.length}
            onChange={(e) => setAdding((e.target as HTMLSelectElement).value)}
          >
            <option value="">
              {addable.length ? "choose a metric…" : "every metric is shown"}
            </option>
            {addable.map((k) => <option key={k} value={k}>{k}</option>)}
          </select>
          <button type="submit" class="small" disabled={!adding}>+ add metric panel</button>
        </form>
      </div>

      {!metrics.length && (
        <p class="panel muted empty">
          {p.keys.length
            ? 'No panels. Add one with "+ add metric panel" above.'
            : "No metrics yet. Log them from the training script with the SDK " +
              '(run.log({"loss": 0.1})), or point the job\'s tensorboard_dir at its event files.'}
        </p>
      )}
      {top && <div class="workspace-top" data-panel={top}>{panel(top, true)}</div>}
      {grid.length > 0 && (
        <div class="workspace-grid">
          {grid.map((k) => <div data-panel={k} key={k}>{panel(k, false)}</div>)}
        </div>
      )}

      <section class="panel workspace-runs">
        <h2>
          Runs
          <span class="muted small">
            {`${rows.length} run${rows.length === 1 ? "" : "s"} · ${selected.length} drawn`}
            {p.primary ? " · sorted by " : ""}
            {p.primary && (
              <code>
                ★ {p.primary.key} {directionArrow(p.primary.direction)}
              </code>
            )}
          </span>
          {selected.length >= 2 && (
            <a class="compare-link" href={compareHref(selected, { smooth, x })}>
              compare selected →
            </a>
          )}
        </h2>
        <div class="table-wrap">
          <table class="workspace-table">
            <thead>
              <tr>
                <th>
                  <span class="sr-only">Drawn</span>
                </th>
                <th>Status</th>
                <th>Run</th>
                <th>Progress</th>
                <th class="num">Best {p.primary ? directionArrow(p.primary.direction) : ""}</th>
                <th class="num">Latest</th>
                <th>Created</th>
              </tr>
            </thead>
            <tbody
              onPointerEnter={() => setPointerOver(true)}
              onPointerLeave={() => setPointerOver(false)}
            >
              {rows.map((r) => (
                <tr key={r.id} data-run={r.id} data-status={r.status}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`draw ${r.name}`}
                      checked={selected.includes(r.id)}
                      onChange={(e) =>
                        setSelected(
                          toggleRun(selected, r.id, (e.target as HTMLInputElement).checked, ranked),
                        )}
                    />
                  </td>
                  <td>
                    <StatusBadge status={r.status} />
                  </td>
                  <RunNameCell id={r.id} name={r.name}>
                    {r.id === best && <span class="badge best">best</span>}
                  </RunNameCell>
                  <ProgressCell step={r.step} maxSteps={r.max_steps} status={r.status} />
                  <td class="num">
                    <strong>{fmtMetric(r.best)}</strong>
                  </td>
                  <td class="num">{fmtMetric(r.latest)}</td>
                  <td>
                    <RelTime at={r.created_at} now={now} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </div>
  );
}
