/** The run page's Evaluations tab: the evaluation jobs of its checkpoints and their results. */
import { fmtDuration, fmtInt, fmtMetric } from "../../islands/_format.ts";
import { RelTime, StatusBadge } from "../../islands/_ui.tsx";
import type { RunDetail } from "../../server/console/run_detail.ts";

import { runHref } from "./_parts.tsx";

export function EvaluationsTab({ d, now }: { d: RunDetail; now: number }) {
  const rows = d.checkpoints.flatMap((c) => c.evaluations.map((e) => ({ c, e })));
  if (!rows.length) {
    return (
      <p class="muted empty">
        No evaluations. Evaluate a checkpoint from the{" "}
        <a href={runHref(d.run.id, "checkpoints")}>Checkpoints</a> tab or with{" "}
        <code>POST /api/checkpoints/{"{id}"}/evaluations</code>.
      </p>
    );
  }
  return (
    <section class="panel">
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Suite</th>
              <th>Status</th>
              <th class="num">Checkpoint step</th>
              <th>Metrics</th>
              <th class="num">Duration</th>
              <th>Job</th>
              <th>Queued</th>
            </tr>
          </thead>
          <tbody>
            {rows.map(({ c, e }) => (
              <tr data-evaluation={e.id}>
                <td>{e.suite}</td>
                <td>
                  <StatusBadge status={e.status} />
                </td>
                <td class="num">{fmtInt(c.step)}</td>
                <td class="small">
                  {Object.entries(e.metrics).map(([k, v]) => (
                    <div>
                      <code>{k}</code> {fmtMetric(v as number)}
                    </div>
                  ))}
                </td>
                <td class="num">{fmtDuration(e.duration_s)}</td>
                <td>{e.job_id ? <a class="id" href={`/jobs#${e.job_id}`}>{e.job_id}</a> : "–"}</td>
                <td>
                  <RelTime at={e.created_at} now={now} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}
