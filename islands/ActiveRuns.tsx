/**
 * The dashboard's active runs: progress (step / max_steps), the primary metric's latest value
 * with its direction, and a sparkline of it, each linking to the run. The list is read again
 * when runs start or end and every few seconds; the sparklines come from one metrics query.
 */
import type { MetricDirection } from "../protocol/vocabulary.ts";
import { fmtMetric, fmtProgress, progressFraction, runColor } from "./_format.ts";
import { type LiveEvent, useJson } from "./_live.ts";
import { Bar, MetricKey, RunDot, Sparkline } from "./_ui.tsx";
import { useSteadyRows } from "./_steady.ts";

export interface ActiveRun {
  id: string;
  name: string;
  project: string;
  experiment: string | null;
  step: number | null;
  max_steps: number | null;
  node_id: string | null;
  primary_metric:
    | { key: string; direction: MetricDirection; latest: number | null; best: number | null }
    | null;
}

export interface ActiveRunsProps {
  runs: ActiveRun[];
  /** Each run's primary metric, downsampled: run id → values. */
  series: Record<string, (number | null)[]>;
}

const SPARK_POINTS = 60;

const changes = (e: LiveEvent) => /^(RUN_|JOB_DISPATCHED)/.test(e.type);

interface SeriesAnswer {
  series: { run_id: string; key: string; values: (number | string)[] }[];
}

export default function ActiveRuns({ runs: initialRuns, series: initialSeries }: ActiveRunsProps) {
  const list = useJson<{ items: ActiveRun[] }>(
    "/api/runs?status=RUNNING&limit=20",
    { items: initialRuns },
    { refreshOn: changes, everyMs: 5_000 },
  );
  const { rows: runs, hold } = useSteadyRows(list.items);
  const keys = [...new Set(runs.map((r) => r.primary_metric?.key).filter((k): k is string => !!k))];
  const query = runs.length && keys.length
    ? { runs: runs.map((r) => r.id), keys, max_points: SPARK_POINTS }
    : undefined;
  const answer = useJson<SeriesAnswer | null>("/api/runs/metrics:query", null, {
    body: query,
    skip: !query,
    everyMs: 5_000,
  });
  const series: Record<string, (number | null)[]> = { ...initialSeries };
  for (const s of answer?.series ?? []) {
    const run = runs.find((r) => r.id === s.run_id);
    if (run?.primary_metric?.key !== s.key) continue;
    series[s.run_id] = s.values.map((v) => typeof v === "number" ? v : null);
  }
  if (runs.length === 0) {
    return (
      <p class="muted empty">
        No run is training. Submit one from <a href="/jobs?submit=1#submit">Jobs</a> or with{" "}
        <code>gpuctl job submit</code>; runs the SDK starts show here too.
      </p>
    );
  }
  return (
    <div class="table-wrap" {...hold}>
      <table class="active-runs">
        <thead>
          <tr>
            <th>Run</th>
            <th>Progress</th>
            <th>Primary metric</th>
            <th class="num">Latest</th>
            <th class="spark-col">Trend</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => {
            const pm = r.primary_metric;
            const fraction = progressFraction(r.step, r.max_steps);
            return (
              <tr key={r.id} data-run={r.id}>
                <td class="run-name">
                  <RunDot id={r.id} /> <a href={`/runs/${encodeURIComponent(r.id)}`}>{r.name}</a>
                  <div class="muted small">
                    {r.project}
                    {r.experiment ? ` / ${r.experiment}` : ""}
                    {r.node_id ? ` · ${r.node_id}` : ""}
                  </div>
                </td>
                <td class="progress-cell">
                  <Bar fraction={fraction} />
                  <span class="small">{fmtProgress(r.step, r.max_steps)}</span>
                </td>
                <td>
                  <MetricKey metric={pm} />
                </td>
                <td class="num">{fmtMetric(pm?.latest)}</td>
                <td class="spark-col">
                  <Sparkline values={series[r.id] ?? []} color={runColor(r.id)} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
