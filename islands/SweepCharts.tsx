/**
 * A sweep's two pictures: every trial's curve of the sweep's metric overlaid (a run's colour
 * is its id's hash, as everywhere), and a scatter of one parameter against each trial's best
 * value. Drawn from what the server rendered with; while the sweep runs, the curves are
 * fetched again every 5 s in one batched metrics query.
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

export interface SweepTrialSeries {
  index: number;
  run_id: string;
  label: string;
  color: string;
  stopped: boolean;
  steps: number[];
  /** null where the value was NaN or infinite. */
  values: (number | null)[];
}

export interface SweepChartsProps {
  metric: string;
  direction: MetricDirection;
  series: SweepTrialSeries[];
  /** Parameter → for each trial with a best value: the value and that best. */
  scatter: { parameter: string; log: boolean; points: { x: number; y: number; color: string }[] }[];
  live: boolean;
}

/** Points per curve asked of the server (about twice the panel's width in pixels). */
const MAX_POINTS = 600;

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

type Series = SweepTrialSeries;

async function refetch(series: Series[], metric: string): Promise<Series[]> {
  const res = await fetch("/api/runs/metrics:query", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      runs: series.map((s) => s.run_id),
      keys: [metric],
      max_points: MAX_POINTS,
    }),
  });
  if (!res.ok) return series;
  const body = await res.json() as {
    series: { run_id: string; steps: number[]; values: (number | string)[] }[];
  };
  return series.map((s) => {
    const got = body.series.find((x) => x.run_id === s.run_id);
    if (!got) return s;
    return {
      ...s,
      steps: got.steps,
      values: got.values.map((v) => typeof v === "number" && Number.isFinite(v) ? v : null),
    };
  });
}

export default function SweepCharts(props: SweepChartsProps) {
  const curves = useRef<HTMLCanvasElement>(null);
  const scatter = useRef<HTMLCanvasElement>(null);
  const [series, setSeries] = useState(props.series);
  const [param, setParam] = useState(props.scatter[0]?.parameter ?? "");
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
    const timer = setInterval(() => {
      refetch(series, props.metric).then(setSeries).catch(() => {});
    }, 5000);
    return () => clearInterval(timer);
  }, [series]);

  useEffect(() => {
    const s = props.scatter.find((x) => x.parameter === param);
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
  }, [param]);

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
      {props.scatter.length > 0 && (
        <section class="panel">
          <h2>
            Parameter vs best {props.metric}
            {props.scatter.length > 1 && (
              <label class="small">
                {" "}
                parameter{" "}
                <select
                  value={param}
                  onChange={(e) => setParam((e.target as HTMLSelectElement).value)}
                >
                  {props.scatter.map((s) => (
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
