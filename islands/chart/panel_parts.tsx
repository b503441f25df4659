/**
 * The chart panel's markup around its canvas, without state of its own: the header (metric,
 * ★ when primary, direction, the exact latest and best values, and the panel's controls),
 * the readout under the pointer, and the legend. `islands/ChartPanel.tsx` owns the state and
 * hands each part what it shows and what to call.
 *
 * @module
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { directionArrow, fmtInt, fmtMetric } from "../_format.ts";
import { emphasis, isVisible, legendClick, legendHover, type LegendState } from "./legend.ts";
import type { PanelRun } from "./panel_types.ts";
import type { Readout } from "./readout.ts";
import { latestAndBest, type PointSeries } from "./series.ts";
import { X_MODES, type XMode } from "./x_axis.ts";

/** How the x switch names each mode. */
export const X_LABEL: Record<XMode, string> = {
  step: "step",
  relative: "relative",
  wall: "wall time",
};

/** The newest point of the visible runs, and the best of them by `direction`, with their runs. */
export function headline(
  runs: readonly { label: string; series: PointSeries | undefined }[],
  direction: MetricDirection | null,
): {
  latest: { step: number; value: number; label: string } | null;
  best: { step: number; value: number; label: string } | null;
} {
  let latest: { step: number; value: number; wall: number; label: string } | null = null;
  let best: { step: number; value: number; label: string } | null = null;
  for (const r of runs) {
    if (!r.series) continue;
    const lb = latestAndBest(r.series, direction);
    if (lb.latest && (!latest || lb.latest.wall > latest.wall)) {
      latest = { ...lb.latest, label: r.label };
    }
    const better = lb.best &&
      (!best || (direction === "max" ? lb.best.value > best.value : lb.best.value < best.value));
    if (better) best = { ...lb.best!, label: r.label };
  }
  return {
    latest: latest && { step: latest.step, value: latest.value, label: latest.label },
    best,
  };
}

export function PanelHead(p: {
  metric: string;
  direction: MetricDirection | null;
  primary: boolean;
  /** The visible runs, for the header's values. */
  runs: { label: string; series: PointSeries | undefined }[];
  smoothing: number;
  /** null: the page owns smoothing (no slider here). */
  onSmooth: ((weight: number) => void) | null;
  x: XMode;
  /** null: the page owns the x axis (no switch here). */
  onX: ((x: XMode) => void) | null;
  log: boolean;
  onLog: (log: boolean) => void;
  zoomed: boolean;
  onReset: () => void;
  onRemove?: () => void;
}) {
  const { latest, best } = headline(p.runs, p.direction);
  const arrowTitle = p.direction === "min"
    ? "lower is better"
    : p.direction === "max"
    ? "higher is better"
    : "";
  const onSmooth = p.onSmooth;
  const onX = p.onX;
  return (
    <figcaption class="chart-head">
      <code class="chart-key">
        {p.primary && <span class="chart-star" title="primary metric">★</span>}
        {p.primary && " "}
        {p.metric} <span title={arrowTitle}>{directionArrow(p.direction)}</span>
      </code>
      <span class="chart-values">
        {latest
          ? (
            <>
              latest <strong>{fmtMetric(latest.value)}</strong> @ {fmtInt(latest.step)}
              {p.runs.length > 1 ? ` (${latest.label})` : ""}
              {best && (
                <>
                  {" · best "}
                  <strong>{fmtMetric(best.value)}</strong> @ {fmtInt(best.step)}
                  {p.runs.length > 1 ? ` (${best.label})` : ""}
                </>
              )}
            </>
          )
          : <span class="muted">no points yet</span>}
      </span>
      <span class="chart-tools">
        {onSmooth && (
          <label class="chart-smooth" title="Smoothing (debiased EMA, as TensorBoard)">
            smooth
            <input
              type="range"
              min="0"
              max="0.999"
              step="0.001"
              value={p.smoothing}
              aria-label={`Smoothing of ${p.metric}`}
              onInput={(e) => onSmooth(Number((e.target as HTMLInputElement).value))}
            />
            <output>{p.smoothing.toFixed(2)}</output>
          </label>
        )}
        {onX && (
          <select
            class="small"
            aria-label={`x axis of ${p.metric}`}
            onChange={(e) => onX((e.target as HTMLSelectElement).value as XMode)}
          >
            {X_MODES.map((m) => (
              <option key={m} value={m} selected={m === p.x}>{X_LABEL[m]}</option>
            ))}
          </select>
        )}
        <label class="chart-log" title="Logarithmic y axis (values ≤ 0 are left out)">
          <input
            type="checkbox"
            checked={p.log}
            onChange={(e) => p.onLog((e.target as HTMLInputElement).checked)}
          />
          log
        </label>
        {p.zoomed && (
          <button
            type="button"
            class="small chart-reset"
            title="Reset zoom (or double-click the chart)"
            onClick={p.onReset}
          >
            ⟲
          </button>
        )}
        {p.onRemove && (
          <button
            type="button"
            class="small chart-remove"
            aria-label={`Remove ${p.metric}`}
            onClick={p.onRemove}
          >
            ×
          </button>
        )}
      </span>
    </figcaption>
  );
}

/** The crosshair at pixel `at` and the readout beside it (on the side with more room). */
export function PanelTip(p: {
  hover: Readout;
  at: number;
  area: { left: number; right: number; top: number; bottom: number };
  /** The chart box's width, to place the readout from the right. */
  width: number;
}) {
  const { hover, at, area } = p;
  if (at < area.left || at > area.right) return null;
  return (
    <>
      <div
        class="chart-crosshair"
        style={{ left: `${at}px`, top: `${area.top}px`, height: `${area.bottom - area.top}px` }}
      />
      <div
        class="chart-tip"
        style={at > (area.left + area.right) / 2
          ? { right: `${p.width - at + 8}px`, top: `${area.top}px` }
          : { left: `${at + 8}px`, top: `${area.top}px` }}
        role="status"
      >
        <div class="chart-tip-title">{hover.title}</div>
        {hover.rows.map((row) => (
          <div key={row.id} class="chart-tip-row" data-run={row.id}>
            <Swatch color={row.color} />
            <span class="chart-tip-label">{row.label}</span>
            <span class="chart-tip-value">{row.text}</span>
          </div>
        ))}
      </div>
    </>
  );
}

/**
 * A run's colour as a small square. An SVG `fill` rather than a `style` attribute: the
 * console's CSP (`style-src 'self'`) refuses inline styles in the server's HTML.
 */
function Swatch({ color }: { color: string }) {
  return (
    <svg class="swatch" width="10" height="10" viewBox="0 0 10 10" aria-hidden="true">
      <rect width="10" height="10" rx="2" fill={color} />
    </svg>
  );
}

/** The runs' legend: a click hides or shows, Ctrl/⌘-click isolates, hover highlights. */
export function PanelLegend(p: {
  metric: string;
  runs: readonly PanelRun[];
  legend: LegendState;
  onLegend: (next: (s: LegendState) => LegendState) => void;
}) {
  const ids = p.runs.map((r) => r.id);
  return (
    <ul class="chart-legend" aria-label={`Runs in ${p.metric}`}>
      {p.runs.map((r) => (
        <li key={r.id}>
          <button
            type="button"
            data-run={r.id}
            aria-pressed={isVisible(p.legend, r.id)}
            class={emphasis(p.legend, r.id) === "faded" ? "faded" : undefined}
            title={`${r.id}: click hides or shows, Ctrl/⌘-click shows it alone`}
            onClick={(e) => p.onLegend((s) => legendClick(s, r.id, ids, e.ctrlKey || e.metaKey))}
            onMouseEnter={() => p.onLegend((s) => legendHover(s, r.id))}
            onMouseLeave={() => p.onLegend((s) => legendHover(s, null))}
          >
            <Swatch color={r.color} />
            {r.label}
          </button>
        </li>
      ))}
    </ul>
  );
}
