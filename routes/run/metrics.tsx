/**
 * The run page's Metrics tab: every series charted, each key's latest, best and trend, and a
 * form to make one the primary metric.
 */
import { directionArrow, fmtInt, fmtMetric } from "../../islands/_format.ts";
import type { RunDetail } from "../../server/console/run_detail.ts";

import { Chart } from "./_parts.tsx";

/** A form that makes `key` the primary metric of the run's experiment (or project). */
export function PrimaryForm(
  { d, k, next }: { d: RunDetail; k: RunDetail["keys"][number]; next: string },
) {
  return (
    <form
      method="post"
      action={`/runs/${encodeURIComponent(d.run.id)}/primary`}
      class="inline-form"
    >
      <input type="hidden" name="next" value={next} />
      <input type="hidden" name="key" value={k.key} />
      <label class="sr-only" for={`dir-${k.key}`}>Better when</label>
      <select id={`dir-${k.key}`} name="direction" class="small">
        <option value="min" selected={k.direction !== "max"}>↓ lower is better</option>
        <option value="max" selected={k.direction === "max"}>↑ higher is better</option>
      </select>
      <button type="submit" class="small" data-action="primary">Make primary</button>
    </form>
  );
}

export function MetricsTable({ d, next }: { d: RunDetail; next?: string }) {
  const keys = d.keys.filter((k) => !k.key.startsWith("sys/"));
  if (!keys.length) {
    return (
      <p class="muted empty">
        No metrics yet. Log them with the SDK (<code>run.log({"{"}"loss": 0.1{"}"})</code>) or point
        the job's <code>tensorboard_dir</code> at its event files.
      </p>
    );
  }
  const pk = d.run.primary_metric?.key;
  return (
    <div class="table-wrap">
      <table>
        <thead>
          <tr>
            <th>Metric</th>
            <th class="num">Latest</th>
            <th class="num">Best</th>
            <th class="num">At step</th>
            <th class="num">Min</th>
            <th class="num">Max</th>
            <th class="num">Points</th>
            {next && (
              <th>
                <span class="sr-only">Primary metric</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => {
            const best = k.direction === "min"
              ? [k.min_value, k.min_step]
              : k.direction === "max"
              ? [k.max_value, k.max_step]
              : [null, null];
            return (
              <tr>
                <td>
                  <code>{k.key}</code> {directionArrow(k.direction)}
                  {k.key === pk && <span class="badge">primary</span>}
                </td>
                <td class="num">{fmtMetric(k.last_value)}</td>
                <td class="num">
                  <strong>{fmtMetric(best[0] as number | null)}</strong>
                </td>
                <td class="num">{fmtInt(best[1] as number | null)}</td>
                <td class="num">{fmtMetric(k.min_value)}</td>
                <td class="num">{fmtMetric(k.max_value)}</td>
                <td class="num">{fmtInt(k.points)}</td>
                {next && <td>{k.key !== pk && <PrimaryForm d={d} k={k} next={next} />}</td>}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

export function MetricsTab(
  { d, canWrite, next }: { d: RunDetail; canWrite: boolean; next: string },
) {
  const charts = d.charts ?? [];
  return (
    <>
      <section class="panel">
        <MetricsTable d={d} next={canWrite ? next : undefined} />
        {canWrite && (
          <p class="small muted">
            The primary metric ranks runs and checkpoints; it is set for {d.run.experiment
              ? `experiment ${d.run.project}/${d.run.experiment}`
              : `project ${d.run.project}`}.
          </p>
        )}
      </section>
      <div class="charts">
        {charts.map((s) => <Chart key={s.key} d={d} s={s} />)}
      </div>
    </>
  );
}
