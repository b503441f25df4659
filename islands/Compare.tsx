/**
 * Runs side by side: one metric of every run overlaid in one tall panel, a menu that switches
 * the metric among the keys the runs share (★ the primary), and the table ranked by it, best
 * first, with the config keys that differ between the runs as columns. The metric, smoothing
 * and x axis live in the URL (`history.replaceState`, no reload); a switched metric's ranking
 * comes from `GET /api/runs/compare`, its series from the panel's own query.
 */
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import ChartPanel from "./ChartPanel.tsx";
import { directionArrow, fmtDuration, fmtInt, fmtMetric, runColor } from "./_format.ts";
import { RunDot, StatusBadge } from "./_ui.tsx";
import type { ApiSeries, PanelRun } from "./chart/panel_types.ts";
import {
  compareRows,
  type ComparisonView,
  configText,
  viewQuery,
} from "./chart/workspace_state.ts";
import { useUrlFollows } from "./chart/url_follow.ts";
import { SmoothSlider, XSwitch } from "./chart/view_controls.tsx";
import type { XMode } from "./chart/x_axis.ts";

export interface CompareProps {
  /** The runs asked for, in the order asked. */
  runs: { id: string; name: string; live: boolean }[];
  comparison: ComparisonView;
  /** The runs' shared primary metric, when they share one. */
  primary: string | null;
  /** Keys the menu offers. */
  keys: string[];
  series: ApiSeries[];
  maxPoints: number;
  smooth: number;
  x: XMode;
}

export default function Compare(p: CompareProps) {
  const [comparison, setComparison] = useState(p.comparison);
  const [metric, setMetric] = useState(p.comparison.metric?.key ?? "");
  const [smooth, setSmooth] = useState(p.smooth);
  const [x, setX] = useState<XMode>(p.x);
  const [problem, setProblem] = useState<string | null>(null);
  const ids = p.runs.map((r) => r.id);

  useUrlFollows(
    viewQuery({ metrics: [], runs: ids, smooth, x }, metric ? { metric } : {}),
    smooth,
  );

  // The comparison of `key`, read again; `quiet` keeps a failed refresh to itself.
  const wanted = useRef(metric);
  const read = async (key: string, quiet: boolean) => {
    const q = new URLSearchParams({ runs: ids.join(","), metric: key });
    try {
      const res = await fetch(`/api/runs/compare?${q}`, { credentials: "same-origin" });
      const body = await res.json();
      if (wanted.current !== key) return; // switched again meanwhile
      if (res.ok) setComparison(body as ComparisonView);
      else if (!quiet) {
        setProblem(body?.error?.message ?? `The comparison could not be read (${res.status})`);
      }
    } catch {
      if (!quiet) {
        setProblem("The server could not be reached; the table still ranks the previous metric.");
      }
    }
  };
  const switchTo = (key: string) => {
    wanted.current = key;
    setMetric(key);
    setProblem(null);
    read(key, false);
  };
  // While a run is live its best and latest move: the table follows.
  const anyLive = p.runs.some((r) => r.live);
  useEffect(() => {
    if (!anyLive || !metric) return;
    const t = setInterval(() => read(metric, true), 5_000);
    return () => clearInterval(t);
  }, [metric]);

  const runs: PanelRun[] = useMemo(
    () => p.runs.map((r) => ({ id: r.id, label: r.name, color: runColor(r.id), live: r.live })),
    [],
  );
  // The table and its ranking follow the metric once its comparison has arrived.
  const current = comparison.metric?.key === metric ? comparison : null;
  const shown = current ?? comparison;
  const rows = compareRows(shown);
  const direction = shown.metric?.direction ?? null;
  // The ranking table, made again only when its comparison changes (not at each step of the
  // smoothing slider).
  const ranked = useMemo(
    () => (
      <section class="panel">
        <h2>
          Ranked by {shown.metric
            ? <code>{shown.metric.key} {directionArrow(shown.metric.direction)}</code>
            : <span class="muted">nothing</span>}
        </h2>
        <p class="muted small">{shown.summary}</p>
        <div class="table-wrap">
          <table class="compare-table">
            <thead>
              <tr>
                <th class="num">Rank</th>
                <th>Run</th>
                <th>Status</th>
                <th class="num">Best</th>
                <th class="num">At step</th>
                <th class="num">Latest</th>
                <th class="num">Steps</th>
                <th class="num">Duration</th>
                {shown.config_diff.map((d) => (
                  <th key={d.key} data-config={d.key}>
                    <code>{d.key}</code>
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.run_id} data-run={r.run_id} class={r.best_run ? "best-row" : ""}>
                  <td class="num">{r.rank ?? "–"}</td>
                  <td class="run-name">
                    <RunDot id={r.run_id} />{" "}
                    <a href={`/runs/${encodeURIComponent(r.run_id)}`}>{r.name}</a>
                    {r.best_run && <span class="badge best">best</span>}
                    <div class="muted small">
                      <code class="id">{r.run_id}</code>
                    </div>
                  </td>
                  <td>
                    <StatusBadge status={r.status} />
                  </td>
                  <td class="num">
                    <strong>{fmtMetric(r.best)}</strong>
                  </td>
                  <td class="num">{fmtInt(r.best_step)}</td>
                  <td class="num">{fmtMetric(r.latest)}</td>
                  <td class="num">{fmtInt(r.steps)}</td>
                  <td class="num">{fmtDuration(r.duration_s)}</td>
                  {r.config.map((v, i) => (
                    <td key={shown.config_diff[i].key} class="num">
                      <code>{configText(v)}</code>
                    </td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {!shown.config_diff.length && (
          <p class="muted small">The runs' configs are the same (or none was recorded).</p>
        )}
      </section>
    ),
    [shown],
  );

  return (
    <div class="compare">
      <div class="workspace-controls">
        <label class="metric-pick">
          <span>Metric</span>
          <select
            name="metric"
            value={metric}
            onChange={(e) => switchTo((e.target as HTMLSelectElement).value)}
          >
            {p.keys.map((k) => <option key={k} value={k}>{k === p.primary ? `★ ${k}` : k}</option>)}
          </select>
        </label>
        <SmoothSlider value={smooth} onChange={setSmooth} />
        <XSwitch value={x} onChange={setX} />
        {!current && !problem && <span class="muted small">ranking by {metric}…</span>}
        {problem && <span class="tone-failed small" role="alert">{problem}</span>}
      </div>
      {!metric && (
        <p class="panel muted empty">
          These runs share no metric key to draw: {comparison.reason ?? "none logged yet"}.
        </p>
      )}
      {metric && (
        <ChartPanel
          key={metric}
          metric={metric}
          direction={metric === shown.metric?.key ? direction : null}
          primary={metric === p.primary}
          runs={runs}
          series={metric === p.comparison.metric?.key ? p.series : undefined}
          maxPoints={p.maxPoints}
          smooth={smooth}
          x={x}
          tall
          onSmooth={setSmooth}
          onX={setX}
        />
      )}

      {ranked}
    </div>
  );
}
