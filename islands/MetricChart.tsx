/**
 * One metric of one run as a line chart (chart.js): drawn once from the series the server
 * rendered with, then only appended to as points arrive over the run's metric stream. The
 * header keeps the exact latest and best values, so the chart never has to be read by eye.
 * Colours come from the stylesheet, so the chart follows light and dark.
 */
import {
  CategoryScale,
  Chart,
  LinearScale,
  LineController,
  LineElement,
  PointElement,
  Tooltip,
} from "chart.js";
import { useEffect, useRef, useState } from "preact/hooks";
import { directionArrow, fmtInt, fmtMetric } from "./_format.ts";
import { subscribe } from "./_live.ts";

Chart.register(LineController, LineElement, PointElement, LinearScale, CategoryScale, Tooltip);

export interface MetricChartProps {
  runId: string;
  metric: string;
  steps: number[];
  /** null where the value was NaN or infinite. */
  values: (number | null)[];
  direction: "min" | "max" | null;
  color: string;
  /** Follow the run's metric stream. */
  live: boolean;
  tall?: boolean;
}

/** Points a live chart keeps before it thins its older half. */
const MAX_POINTS = 4000;

type Point = { x: number; y: number | null };

function cssVar(name: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
}

function best(points: Point[], direction: "min" | "max" | null): Point | null {
  let b: Point | null = null;
  for (const p of points) {
    if (p.y === null) continue;
    if (!b || (direction === "max" ? p.y > b.y! : p.y < b.y!)) b = p;
  }
  return direction ? b : null;
}

export default function MetricChart(p: MetricChartProps) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const chart = useRef<Chart<"line", Point[]> | null>(null);
  const [points, setPoints] = useState<Point[]>(() =>
    p.steps.map((x, i) => ({ x, y: p.values[i] }))
  );
  useEffect(() => {
    if (!canvas.current) return;
    const colors = () => ({ grid: cssVar("--border"), text: cssVar("--text-muted") });
    const c = colors();
    chart.current = new Chart(canvas.current, {
      type: "line",
      data: {
        datasets: [{
          data: points,
          borderColor: p.color,
          backgroundColor: p.color,
          borderWidth: 1.5,
          pointRadius: 0,
          pointHitRadius: 6,
          spanGaps: false,
        }],
      },
      options: {
        animation: false,
        maintainAspectRatio: false,
        parsing: false,
        normalized: true,
        interaction: { mode: "nearest", axis: "x", intersect: false },
        scales: {
          x: {
            type: "linear",
            grid: { color: c.grid },
            ticks: { color: c.text, maxTicksLimit: 6 },
          },
          y: { grid: { color: c.grid }, ticks: { color: c.text, maxTicksLimit: 5 } },
        },
        plugins: {
          legend: { display: false },
          tooltip: {
            callbacks: {
              title: (items) => `step ${fmtInt(items[0]?.parsed.x)}`,
              label: (item) => `${p.metric} ${fmtMetric(item.parsed.y)}`,
            },
          },
        },
      },
    });
    const scheme = matchMedia("(prefers-color-scheme: dark)");
    const recolor = () => {
      const ch = chart.current;
      if (!ch) return;
      const k = colors();
      for (const axis of ["x", "y"] as const) {
        const s = ch.options.scales![axis]!;
        s.grid!.color = k.grid;
        s.ticks!.color = k.text;
      }
      ch.update("none");
    };
    scheme.addEventListener("change", recolor);
    return () => {
      scheme.removeEventListener("change", recolor);
      chart.current?.destroy();
      chart.current = null;
    };
  }, []);
  useEffect(() => {
    if (!p.live) return;
    return subscribe(`/api/runs/${encodeURIComponent(p.runId)}/metrics/stream`, {
      message: (d) => {
        const fresh = ((d as { points?: { key: string; step: number; value: number | string }[] })
          .points ?? []).filter((x) => x.key === p.metric);
        if (!fresh.length) return;
        setPoints((old) => {
          let next = old.slice();
          for (const f of fresh) {
            const y = typeof f.value === "number" ? f.value : null;
            const last = next[next.length - 1];
            if (last && f.step <= last.x) {
              const at = next.findIndex((q) => q.x === f.step);
              if (at >= 0) next[at] = { x: f.step, y };
              continue;
            }
            next.push({ x: f.step, y });
          }
          if (next.length > MAX_POINTS) {
            const half = next.length >> 1;
            next = next.slice(0, half).filter((_, i) => i % 2 === 0).concat(next.slice(half));
          }
          return next;
        });
      },
    });
  }, [p.runId, p.metric, p.live]);
  useEffect(() => {
    const ch = chart.current;
    if (!ch) return;
    ch.data.datasets[0].data = points;
    ch.update("none");
  }, [points]);
  const latest = points.length ? points[points.length - 1] : null;
  const b = best(points, p.direction);
  return (
    <figure class="panel chart-panel" data-metric={p.metric}>
      <figcaption class="chart-head">
        <code>
          {p.metric}{" "}
          <span
            title={p.direction === "min"
              ? "lower is better"
              : p.direction === "max"
              ? "higher is better"
              : ""}
          >
            {directionArrow(p.direction)}
          </span>
        </code>
        <span class="chart-values">
          latest <strong>{fmtMetric(latest?.y ?? null)}</strong>
          {latest ? ` @ ${fmtInt(latest.x)}` : ""}
          {b && (
            <>
              {" · best "}
              <strong>{fmtMetric(b.y)}</strong> @ {fmtInt(b.x)}
            </>
          )}
        </span>
      </figcaption>
      <div class={`chart-box${p.tall ? " tall" : ""}`}>
        <canvas ref={canvas} role="img" aria-label={`${p.metric} by step`} />
      </div>
    </figure>
  );
}
