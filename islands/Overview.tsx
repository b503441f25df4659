/**
 * The dashboard's answer to "can I submit another job now, and does anything need me?":
 * cards for nodes, GPUs, running and queued jobs and unhandled alerts, the recent alerts, and
 * the head of the queue with forecast starts. Read again whenever a job, run or node changes.
 */
import { fmtAbsolute } from "./_format.ts";
import { type LiveEvent, useJson, useNow } from "./_live.ts";
import { Bar, EventItem, type EventView, RelTime } from "./_ui.tsx";

export interface OverviewStatus {
  nodes: { online: number; offline: number; total: number };
  gpus: { busy: number; total: number };
  jobs: { queued: number; dispatched: number; running: number };
  alerts: {
    window_h: number;
    warning: number;
    critical: number;
    recent: EventView[];
  };
  queue: {
    job_id: string;
    name: string;
    gpus: number;
    priority: number;
    reason: string | null;
    estimated_start_at: string | null;
    estimated_node: string | null;
  }[];
}

export interface OverviewProps {
  status: OverviewStatus;
  now: number;
  /** Whether to offer the submit form (write sessions). */
  canWrite: boolean;
}

const changes = (e: LiveEvent) => /^(JOB_|RUN_|NODE_)/.test(e.type) || e.severity !== "info";

export default function Overview({ status: initial, now: rendered, canWrite }: OverviewProps) {
  const s = useJson<OverviewStatus>("/api/status", initial, {
    refreshOn: changes,
    everyMs: 15_000,
  });
  const now = useNow(rendered);
  const free = s.gpus.total - s.gpus.busy;
  return (
    <>
      <div class="cards">
        <a class="card" href="/nodes">
          <span class="card-label">Nodes online</span>
          <span class="card-value">{s.nodes.online}/{s.nodes.total}</span>
          <span class={s.nodes.offline ? "card-note tone-failed" : "card-note muted"}>
            {s.nodes.offline ? `${s.nodes.offline} offline` : "all online"}
          </span>
        </a>
        <a class="card" href="/nodes">
          <span class="card-label">GPUs busy</span>
          <span class="card-value">{s.gpus.busy}/{s.gpus.total}</span>
          <Bar fraction={s.gpus.total ? s.gpus.busy / s.gpus.total : null} />
          <span class="card-note muted">{free > 0 ? `${free} free now` : "none free"}</span>
        </a>
        <a class="card" href="/jobs?status=RUNNING">
          <span class="card-label">Running</span>
          <span class="card-value tone-running">{s.jobs.running}</span>
          <span class="card-note muted">
            {s.jobs.dispatched ? `${s.jobs.dispatched} starting` : "jobs"}
          </span>
        </a>
        <a class="card" href="/jobs?status=QUEUED">
          <span class="card-label">Queued</span>
          <span class="card-value">{s.jobs.queued}</span>
          <span class="card-note muted">jobs waiting for GPUs</span>
        </a>
        <a class="card" href="/events?severity=warning">
          <span class="card-label">Alerts ({s.alerts.window_h} h)</span>
          <span class="card-value">
            <span class={s.alerts.critical ? "tone-critical" : ""}>{s.alerts.critical}</span>
            <span class="card-sep">/</span>
            <span class={s.alerts.warning ? "tone-warning" : ""}>{s.alerts.warning}</span>
          </span>
          <span class="card-note muted">critical / warning</span>
        </a>
      </div>
      <div class="two-col">
        <section class="panel">
          <h2>Recent alerts</h2>
          {s.alerts.recent.length === 0
            ? (
              <p class="muted empty">
                No warnings or critical events. Anomalies (OOM, NaN loss, stalls) show here.
              </p>
            )
            : (
              <ul class="event-list compact">
                {s.alerts.recent.map((e) => (
                  <EventItem
                    key={e.id}
                    e={e}
                    now={now}
                    links="message"
                  />
                ))}
              </ul>
            )}
        </section>
        <section class="panel">
          <h2>Next in the queue</h2>
          {s.queue.length === 0
            ? (
              <p class="muted empty">
                Nothing queued: a job submitted now starts on a free GPU
                {canWrite
                  ? (
                    <>
                      {" ("}
                      <a href="/jobs?submit=1#submit">+ submit job</a>).
                    </>
                  )
                  : "."}
              </p>
            )
            : (
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th>Job</th>
                      <th class="num">GPUs</th>
                      <th class="num">Priority</th>
                      <th>Starts</th>
                    </tr>
                  </thead>
                  <tbody>
                    {s.queue.map((q) => (
                      <tr key={q.job_id}>
                        <td>
                          <a href={`/jobs#${q.job_id}`}>{q.name}</a>
                          {q.reason && <div class="muted small">{q.reason}</div>}
                        </td>
                        <td class="num">{q.gpus}</td>
                        <td class="num">{q.priority}</td>
                        <td title={fmtAbsolute(q.estimated_start_at)}>
                          {q.estimated_start_at
                            ? (
                              <>
                                <RelTime at={q.estimated_start_at} now={now} />
                                {q.estimated_node && (
                                  <span class="muted">{` on ${q.estimated_node}`}</span>
                                )}
                              </>
                            )
                            : <span class="muted">unknown</span>}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
        </section>
      </div>
    </>
  );
}
