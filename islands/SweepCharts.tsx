/**
 * A sweep's two pictures: every trial's curve of the sweep's metric overlaid (a run's colour
 * is its id's hash, as everywhere), and a scatter of one parameter against each trial's best
 * value. Drawn from what the server rendered with; while the sweep runs, the sweep and its
 * trials' curves are fetched again every 5 s (the sweep, then one batched metrics query), so
 * trials that start after the page opened, and their best values, appear without a reload.
 */
import type { MetricDirection } from "../protocol/vocabulary.ts";
import {
  Chart,
  Legend,
  LinearScale,
  LineController,
  LineElement,
  LogarithmicScale,
  PointElement,
  ScatterController,
  Tooltip,
} from "chart.js";
import { useEffect, useRef, useState } from "preact/hooks";
import { fmtMetric } from "./_format.ts";
import type { Sweep } from "../protocol/sweeps.ts";
import {
  type SweepScatter,
  type SweepTrialSeries,
  sweepView,
  type TrialCurve,
  trialRunIds,
} from "./_sweep_view.ts";

Chart.register(
  LineController,
  LineElement,
  PointElement,
  LinearScale,
  LogarithmicScale,
  ScatterController,
  Tooltip,
  Legend,
);
// The page's chart.js, so `Chart.getChart(canvas)` reads a chart back as drawn (the browser
// tests, or a person in the devtools console).
(globalThis as { Chart?: typeof Chart }).Chart ??= Chart;

export interface SweepChartsProps {
  sweep_id: string;
  metric: string;
  direction: MetricDirection;
  series: SweepTrialSeries[];
  scatter: SweepScatter[];
  live: boolean;
}

/** Points per curve asked of the server (about twice the panel's width in pixels). */
export const SWEEP_CURVE_POINTS = 600;

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

/** The sweep and its trials' curves as they are now; null when either could not be read. */
async function refetch(
  sweepId: string,
  metric: string,
): Promise<{ series: SweepTrialSeries[]; scatter: SweepScatter[]; running: boolean } | null> {
  const got = await fetch(`/api/sweeps/${encodeURIComponent(sweepId)}`);
  if (!got.ok) return null;
  const sweep = await got.json() as Sweep;
  const runs = trialRunIds(sweep);
  let curves: TrialCurve[] = [];
  if (runs.length) {
    const res = await fetch("/api/runs/metrics:query", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ runs, keys: [metric], max_points: SWEEP_CURVE_POINTS }),
    });
    if (!res.ok) return null;
    curves = (await res.json() as { series: TrialCurve[] }).series;
  }
  return { ...sweepView(sweep, curves), running: sweep.status === "RUNNING" };
}

export default function SweepCharts(props: SweepChartsProps) {
  const curves = useRef<HTMLCanvasElement>(null);
  const scatter = useRef<HTMLCanvasElement>(null);
  const [series, setSeries] = useState(props.series);
  const [scatters, setScatters] = useState(props.scatter);
  const [picked, setParam] = useState(props.scatter[0]?.parameter ?? "");
  // The first parameter once one has points, unless one was picked.
  const param = scatters.some((x) => x.parameter === picked)
    ? picked
    : scatters[0]?.parameter ?? "";
  const chart = useRef<Chart | null>(null);

  useEffect(() => {
    if (!curves.current) return;
    const grid = cssVar("--border");
    const text = cssVar("--muted");
    chart.current = new Chart(curves.current, {
      type: "line",
      data: { datasets: [] },
      options: {
        animation: false,
        parsing: false,
        normalized: true,
        responsive: true,
        maintainAspectRatio: false,
        interaction: { mode: "nearest", intersect: false },
        scales: {
          x: {
            type: "linear",
            title: { display: true, text: "step", color: text },
            grid: { color: grid },
            ticks: { color: text },
          },
          y: {
            type: "linear",
            title: { display: true, text: props.metric, color: text },
            grid: { color: grid },
            ticks: { color: text },
          },
        },
        plugins: {
          legend: { labels: { color: text, boxWidth: 10 } },
          tooltip: {
            callbacks: { label: (c) => `${c.dataset.label}: ${fmtMetric(c.parsed.y)}` },
          },
        },
      },
    });
    return () => chart.current?.destroy();
  }, []);

  useEffect(() => {
    const c = chart.current;
    if (!c) return;
    c.data.datasets = series.map((s) => ({
      label: `#${s.index + 1} ${s.label}${s.stopped ? " (stopped)" : ""}`,
      data: s.steps.map((x, i) => ({ x, y: s.values[i] })),
      borderColor: s.color,
      backgroundColor: s.color,
      borderWidth: s.stopped ? 1 : 2,
      borderDash: s.stopped ? [4, 3] : [],
      pointRadius: 0,
      spanGaps: false,
    }));
    c.update("none");
  }, [series]);

  useEffect(() => {
    if (!props.live) return;
    let running = true;
    const timer = setInterval(() => {
      if (!running) return;
      refetch(props.sweep_id, props.metric).then((now) => {
        if (!now) return;
        setSeries(now.series);
        setScatters(now.scatter);
        running = now.running;
      }).catch(() => {});
    }, 5000);
    return () => clearInterval(timer);
  }, []);

  useEffect(() => {
    const s = scatters.find((x) => x.parameter === param);
    if (!scatter.current || !s) return;
    const grid = cssVar("--border");
    const text = cssVar("--muted");
    const c = new Chart(scatter.current, {
      type: "scatter",
      data: {
        datasets: [{
          label: `best ${props.metric}`,
          data: s.points.map((p) => ({ x: p.x, y: p.y })),
          pointBackgroundColor: s.points.map((p) => p.color),
          pointRadius: 5,
        }],
      },
      options: {
        animation: false,
        responsive: true,
        maintainAspectRatio: false,
        scales: {
          x: {
            type: s.log ? "logarithmic" : "linear",
            title: { display: true, text: s.parameter, color: text },
            grid: { color: grid },
            ticks: { color: text },
          },
          y: {
            title: { display: true, text: `best ${props.metric}`, color: text },
            grid: { color: grid },
            ticks: { color: text },
          },
        },
        plugins: { legend: { display: false } },
      },
    });
    return () => c.destroy();
  }, [param, scatters]);

  return (
    <div class="sweep-charts">
      <section class="panel">
        <h2>
          {props.metric}{" "}
          <span class="muted small">{props.direction === "min" ? "↓ better" : "↑ better"}</span>
        </h2>
        <div class="chart-box tall">
          <canvas ref={curves} role="img" aria-label={`${props.metric} of every trial`} />
        </div>
      </section>
      {scatters.length > 0 && (
        <section class="panel">
          <h2>
            Parameter vs best {props.metric}
            {scatters.length > 1 && (
              <label class="small">
                {" "}
                parameter{" "}
                <select
                  value={param}
                  onChange={(e) => setParam((e.target as HTMLSelectElement).value)}
                >
                  {scatters.map((s) => (
                    <option key={s.parameter} value={s.parameter}>{s.parameter}</option>
                  ))}
                </select>
              </label>
            )}
          </h2>
          <div class="chart-box">
            <canvas
              ref={scatter}
              role="img"
              aria-label={`${param} against the best ${props.metric}`}
            />
          </div>
        </section>
      )}
    </div>
  );
}
