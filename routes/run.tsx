/**
 * `/runs/{id}`: one run, with tabs (`?tab=`). A running run's overview is live first
 * (progress, the primary metric, events, the log tail); a failed or lost run's is diagnosis
 * first (the failure card, and a retry that warns when the same configuration fails again);
 * any other run's is its summary, metrics, config and environment.
 */
import { Island } from "../components/island.tsx";
import ChartPanel from "../islands/ChartPanel.tsx";
import ConfirmAction from "../islands/ConfirmAction.tsx";
import EventFeed from "../islands/EventFeed.tsx";
import LogTail from "../islands/LogTail.tsx";
import RunProgress from "../islands/RunProgress.tsx";
import {
  directionArrow,
  fmtBytes,
  fmtDuration,
  fmtInt,
  fmtMetric,
  fmtProgress,
  progressFraction,
  runColor,
  secondsBetween,
} from "../islands/_format.ts";
import { Bar, Id, RelTime, RunDot, StatusBadge } from "../islands/_ui.tsx";
import { confirmedAction, Notice } from "../server/console/actions.tsx";
import type { PageRequest, PageRoute } from "../server/console/page.tsx";
import {
  CHART_POINTS,
  type ChartSeries,
  loadRunDetail,
  RUN_TABS,
  type RunDetail,
  type RunTab,
} from "../server/console/run_detail.ts";
import { nowMs, pathSegment, shellPage } from "../server/console/shell.tsx";
import { queueEvaluation } from "../server/evaluations/mod.ts";
import { validationError } from "../server/errors.ts";
import { setPrimaryMetric } from "../server/projects/service.ts";
import { getRun } from "../server/runs/service.ts";
import { evaluationRequest, primaryMetricSet } from "../protocol/rest.ts";
import { CodeTab, lineagePageRoutes, LineagePanel } from "./_lineage.tsx";

const TAB_LABEL: Record<RunTab, string> = {
  overview: "Overview",
  metrics: "Metrics",
  checkpoints: "Checkpoints",
  evaluations: "Evaluations",
  events: "Events",
  code: "Code",
};

const runHref = (id: string, tab?: RunTab) =>
  `/runs/${encodeURIComponent(id)}${tab && tab !== "overview" ? `?tab=${tab}` : ""}`;

function Header({ d, now, canWrite, next }: {
  d: RunDetail;
  now: number;
  canWrite: boolean;
  next: string;
}) {
  const { run, job } = d;
  const expHref = `/runs?project=${encodeURIComponent(run.project)}${
    run.experiment ? `&experiment=${encodeURIComponent(run.experiment)}` : ""
  }`;
  return (
    <div class="run-head">
      <Id id={run.id} />
      <span>
        <a href={expHref}>{run.project}{run.experiment ? ` / ${run.experiment}` : ""}</a>
      </span>
      {job && (
        <span>
          job <a href={`/jobs#${job.id}`}>{job.name}</a>{" "}
          <span class="muted">attempt {run.attempt}/{job.max_attempts}</span>
        </span>
      )}
      {run.node_id && (
        <span>
          on <a href={`/nodes#node-${run.node_id}`}>{run.node_id}</a>
          {job?.gpu_indices.length ? ` GPU ${job.gpu_indices.join(",")}` : ""}
        </span>
      )}
      <span>source {run.source}</span>
      <span>
        started <RelTime at={run.started_at ?? run.created_at} now={now} />
      </span>
      <span>
        {fmtDuration(secondsBetween(run.started_at ?? run.created_at, run.finished_at, now))}
        {run.finished_at ? "" : " so far"}
      </span>
      {canWrite && job && <RunActions d={d} next={next} />}
    </div>
  );
}

function RunActions({ d, next }: { d: RunDetail; next: string }) {
  const job = d.job!;
  const active = ["QUEUED", "DISPATCHED", "RUNNING"].includes(job.status);
  const failsAgain = d.failure?.retry === "fails_again";
  return (
    <span class="actions run-actions">
      {active && (
        <Island
          component={ConfirmAction}
          props={{
            action: `/jobs/${encodeURIComponent(job.id)}/cancel`,
            label: "Cancel job",
            question: `Cancel "${job.name}"?`,
            yes: "Yes, cancel",
            next,
            danger: true,
            small: true,
          }}
        />
      )}
      {!active && job.status !== "SUCCEEDED" && (
        <Island
          component={ConfirmAction}
          props={{
            action: `/jobs/${encodeURIComponent(job.id)}/retry`,
            label: failsAgain ? "Retry (same config will fail the same way)" : "Retry",
            question: failsAgain
              ? "The diagnosis says this configuration fails the same way again. Requeue anyway?"
              : `Requeue "${job.name}" as attempt ${job.attempt + 1}?`,
            yes: "Yes, retry",
            next,
            small: true,
            danger: failsAgain,
          }}
        />
      )}
    </span>
  );
}

function Tabs({ d }: { d: RunDetail }) {
  const evals = d.checkpoints.reduce((n, c) => n + c.evaluations.length, 0);
  const count: Partial<Record<RunTab, number>> = {
    metrics: d.keys.length,
    checkpoints: d.checkpoints.length,
    evaluations: evals,
  };
  return (
    <nav class="tabs" aria-label="Run">
      {RUN_TABS.map((t) => (
        <a href={runHref(d.run.id, t)} aria-current={t === d.tab ? "page" : undefined}>
          {TAB_LABEL[t]}
          {count[t] !== undefined && <span class="count">{count[t]}</span>}
        </a>
      ))}
    </nav>
  );
}

function Chart({ d, s, tall }: { d: RunDetail; s: ChartSeries; tall?: boolean }) {
  return (
    <Island
      component={ChartPanel}
      props={{
        metric: s.key,
        direction: s.direction,
        primary: s.key === d.run.primary_metric?.key,
        runs: [{
          id: d.run.id,
          label: d.run.name ?? d.run.id,
          color: runColor(d.run.id),
          live: d.live,
        }],
        series: [s.series],
        maxPoints: CHART_POINTS,
        tall: tall ?? false,
      }}
    />
  );
}

/** Text with `backticked` parts in monospace (as text, never markup). */
function Ticks({ text }: { text: string }) {
  return <>{text.split("`").map((part, i) => i % 2 ? <code key={i}>{part}</code> : part)}</>;
}

function FailureCard({ d }: { d: RunDetail }) {
  const f = d.failure!;
  return (
    <section class="panel failure-card" data-cause={f.cause_id}>
      <h2>Why it {d.run.status === "LOST" ? "was lost" : "failed"}</h2>
      <p class="cause">{f.likely_cause}</p>
      <p class="muted small">
        confidence {Math.round(f.confidence * 100)}% · cause <code>{f.cause_id}</code>
      </p>
      {f.evidence.length > 0 && (
        <>
          <h3 class="small muted">Evidence</h3>
          <ul class="evidence">
            {f.evidence.map((e) => (
              <li>
                <span class="muted">{e.kind}{e.line_no ? ` (line ${e.line_no})` : ""}:</span>{" "}
                <code class="cmd">{e.detail}</code>
              </li>
            ))}
          </ul>
        </>
      )}
      {f.suggested_fixes.length > 0 && (
        <>
          <h3 class="small muted">Suggested fixes</h3>
          <ol class="fixes">
            {f.suggested_fixes.map((s) => (
              <li key={s}>
                <Ticks text={s} />
              </li>
            ))}
          </ol>
        </>
      )}
      <p class={f.retry === "fails_again" ? "retry-advice tone-failed" : "retry-advice"}>
        {f.retry_advice}
      </p>
      {f.last_checkpoint && (
        <p class="small">
          Last checkpoint: step {fmtInt(f.last_checkpoint.step)}{" "}
          <code class="cmd">{f.last_checkpoint.path}</code>
        </p>
      )}
    </section>
  );
}

/** A form that makes `key` the primary metric of the run's experiment (or project). */
function PrimaryForm({ d, k, next }: { d: RunDetail; k: RunDetail["keys"][number]; next: string }) {
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

function MetricsTable({ d, next }: { d: RunDetail; next?: string }) {
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

function Kv({ obj, empty }: { obj: Record<string, unknown>; empty: string }) {
  const entries = Object.entries(obj ?? {});
  if (!entries.length) return <p class="muted">{empty}</p>;
  return (
    <dl class="kv">
      {entries.map(([k, v]) => (
        <>
          <dt>{k}</dt>
          <dd>{typeof v === "string" ? v : JSON.stringify(v)}</dd>
        </>
      ))}
    </dl>
  );
}

function Summary({ d }: { d: RunDetail }) {
  const { run } = d;
  const diag = d.diagnosis;
  return (
    <>
      <section class="panel">
        <h2>Summary</h2>
        <div class="big-progress">
          <Bar
            fraction={progressFraction(run.step, run.max_steps)}
            tone={run.status === "SUCCEEDED" ? "util" : "running"}
          />
          <span class="nums">{fmtProgress(run.step, run.max_steps)}</span>
        </div>
        <p class="small muted">
          step {fmtInt(run.step)}
          {run.epoch !== null ? ` · epoch ${fmtInt(run.epoch)}` : ""}
          {run.dropped_points ? ` · ${fmtInt(run.dropped_points)} points dropped` : ""}
        </p>
        {diag && !d.failure && <p>{diag.summary}</p>}
        {diag?.primary_metric && (
          <p class="small">
            Trend of <code>{diag.primary_metric.key}</code>: {diag.primary_metric.trend.verdict} —
            {" "}
            {diag.primary_metric.trend.explanation}
          </p>
        )}
      </section>
      <section class="panel">
        <h2>Metrics</h2>
        <MetricsTable d={d} />
      </section>
      <div class="two-col">
        <section class="panel">
          <h2>Config</h2>
          <Kv obj={run.config} empty="No config recorded." />
        </section>
        <section class="panel">
          <h2>Environment</h2>
          <Kv obj={run.env} empty="No environment snapshot." />
        </section>
      </div>
    </>
  );
}

function Overview({ d, now }: { d: RunDetail; now: number }) {
  const primary = d.charts?.[0];
  const logs = (
    <details class="panel drawer" open data-drawer>
      <summary>Log{d.live ? " (live)" : ""}</summary>
      <Island
        component={LogTail}
        props={{
          runId: d.run.id,
          lines: (d.logs ?? []).map((l) => ({ seq: l.seq, stream: l.stream, text: l.text })),
          live: d.live,
          keep: 2000,
        }}
      />
    </details>
  );
  const events = (
    <section class="panel">
      <h2>Last events</h2>
      <RunEvents d={d} now={now} limit={10} />
    </section>
  );

  if (d.live) {
    const diag = d.diagnosis!;
    return (
      <>
        <section class="panel">
          <Island
            component={RunProgress}
            props={{
              runId: d.run.id,
              initial: {
                status: diag.status,
                progress: { step: diag.progress.step, max_steps: diag.progress.max_steps },
                rate: diag.rate ? { steps_per_s: diag.rate.steps_per_s } : null,
                eta: diag.eta ? { seconds: diag.eta.seconds, at: diag.eta.at } : null,
              },
            }}
          />
        </section>
        <div class="two-col">
          {primary
            ? <Chart d={d} s={primary} tall />
            : <p class="panel muted">No primary metric yet: the first logged loss becomes one.</p>}
          {events}
        </div>
        {logs}
      </>
    );
  }
  if (d.failed && d.failure) {
    return (
      <>
        <FailureCard d={d} />
        {logs}
        <Summary d={d} />
      </>
    );
  }
  return (
    <>
      <Summary d={d} />
      {primary && <Chart d={d} s={primary} tall />}
      {events}
      {logs}
    </>
  );
}

/** The run's events, live while it runs. */
function RunEvents({ d, now, limit }: { d: RunDetail; now: number; limit: number }) {
  return (
    <Island
      component={EventFeed}
      props={{
        events: d.events ?? [],
        filter: { run_id: d.run.id },
        live: d.live,
        limit,
        compact: true,
        after: d.lastEventId,
        empty: "No events for this run yet.",
        now,
      }}
    />
  );
}

function MetricsTab({ d, canWrite, next }: { d: RunDetail; canWrite: boolean; next: string }) {
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

function CheckpointsTab({ d, canWrite, now, next }: {
  d: RunDetail;
  canWrite: boolean;
  now: number;
  next: string;
}) {
  const r = d.recommendation;
  if (!d.checkpoints.length) {
    return (
      <p class="muted empty">
        No checkpoints. Files the job writes into its{" "}
        <code>checkpoint_dir</code>, or that the SDK registers with{" "}
        <code>run.log_checkpoint(path)</code>, show here.
      </p>
    );
  }
  return (
    <>
      {r && (
        <div class="banner" role="note">
          {r.checkpoint
            ? (
              <>
                <strong>Recommended: step {fmtInt(r.checkpoint.step)}</strong>{" "}
                <code class="cmd">{r.checkpoint.path}</code>
                <p class="small">{r.reason}</p>
              </>
            )
            : <p>{r.reason}</p>}
        </div>
      )}
      <section class="panel">
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th class="num">Step</th>
                <th class="num">Epoch</th>
                <th class="num">Size</th>
                <th>Path</th>
                <th>Saved</th>
                <th>Metrics at step</th>
                <th class="num">Evaluations</th>
                {canWrite && (
                  <th>
                    <span class="sr-only">Evaluate</span>
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {d.checkpoints.map((c) => (
                <tr
                  data-checkpoint={c.id}
                  class={r?.checkpoint?.checkpoint_id === c.id ? "recommended" : ""}
                >
                  <td class="num">
                    {fmtInt(c.step)}
                    {r?.checkpoint?.checkpoint_id === c.id && <span class="badge">best</span>}
                  </td>
                  <td class="num">{fmtInt(c.epoch)}</td>
                  <td class="num">{fmtBytes(c.size_bytes)}</td>
                  <td>
                    <code class="cmd">{c.path}</code>
                    {c.overwritten && (
                      <div class="small tone-warning">overwritten by a later run</div>
                    )}
                    {c.state === "gone" && (
                      <div class="small tone-warning">gone: the file no longer exists</div>
                    )}
                    {c.state === "incomplete" && (
                      <div class="small tone-warning">incomplete: {c.problem}</div>
                    )}
                  </td>
                  <td>
                    <RelTime at={c.created_at} now={now} />
                  </td>
                  <td class="small">
                    {Object.entries(c.metrics).slice(0, 4).map(([k, v]) => (
                      <div>
                        <code>{k}</code> {fmtMetric(v as number)}
                      </div>
                    ))}
                  </td>
                  <td class="num">{c.evaluations.length}</td>
                  {canWrite && (
                    <td>
                      {c.state === "valid" && (
                        <form
                          method="post"
                          action={`/checkpoints/${encodeURIComponent(c.id)}/evaluate`}
                          class="inline-form"
                        >
                          <input type="hidden" name="next" value={next} />
                          <input type="hidden" name="confirmed" value="1" />
                          <label class="sr-only" for={`suite-${c.id}`}>Suite</label>
                          <input id={`suite-${c.id}`} name="suite" value="heldout" required />
                          {!d.evalCommand && (
                            <>
                              <label class="sr-only" for={`cmd-${c.id}`}>Evaluation command</label>
                              <input
                                id={`cmd-${c.id}`}
                                name="command"
                                placeholder="eval command"
                                title="The project has no eval_command: the command that evaluates $GPUCTL_CHECKPOINT_PATH"
                                required
                              />
                            </>
                          )}
                          <button type="submit" class="small">Evaluate</button>
                        </form>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </section>
    </>
  );
}

function EvaluationsTab({ d, now }: { d: RunDetail; now: number }) {
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

async function runPage(p: PageRequest): Promise<Response> {
  const id = pathSegment(p, 1);
  const asked = p.url.searchParams.get("tab") ?? "overview";
  const tab = (RUN_TABS as readonly string[]).includes(asked) ? asked as RunTab : "overview";
  const d = await loadRunDetail(p.ctx, id, tab);
  const now = nowMs(p.ctx);
  const next = runHref(id, tab);
  return shellPage(
    p,
    {
      title: d.run.name,
      path: "/runs",
      heading: (
        <span class="title-status">
          <StatusBadge status={d.run.status} /> <RunDot id={d.run.id} />
          <span class="run-title">{d.run.name}</span>
        </span>
      ),
    },
    <>
      <Header d={d} now={now} canWrite={p.canWrite} next={next} />
      <Notice url={p.url} req={p.req} />
      <Tabs d={d} />
      {tab === "overview" && (
        <LineagePanel
          runId={d.run.id}
          parent={d.run.parent_run}
          mark={d.run.mark}
          notes={d.notes}
          canWrite={p.canWrite}
          next={next}
          now={now}
        />
      )}
      {tab === "overview" && <Overview d={d} now={now} />}
      {tab === "metrics" && <MetricsTab d={d} canWrite={p.canWrite} next={next} />}
      {tab === "checkpoints" && (
        <CheckpointsTab
          d={d}
          canWrite={p.canWrite}
          now={now}
          next={next}
        />
      )}
      {tab === "evaluations" && <EvaluationsTab d={d} now={now} />}
      {tab === "code" && <CodeTab code={d.code ?? null} runId={d.run.id} />}
      {tab === "events" && (
        <section class="panel">
          <RunEvents d={d} now={now} limit={500} />
        </section>
      )}
    </>,
  );
}

export const runRoutes: PageRoute[] = [
  { method: "GET", path: "/runs/:id", scope: "read", handler: runPage },
  ...lineagePageRoutes,
  {
    method: "POST",
    path: "/runs/:id/primary",
    scope: "read",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        what: "setting a primary metric",
        question: "",
        yes: "",
        fallback: runHref(id, "metrics"),
        confirm: false,
        run: (fields) => {
          const run = getRun(p.ctx, id);
          const input = primaryMetricSet.safeParse({
            scope: run.experiment ? "experiment" : "project",
            scope_id: run.experiment ? `${run.project}/${run.experiment}` : run.project,
            key: fields.key ?? "",
            direction: fields.direction,
          });
          if (!input.success) throw validationError("primary metric", input.error);
          const def = setPrimaryMetric(p.ctx, input.data);
          return `"${def.key}" (${def.direction === "min" ? "lower" : "higher"} is better) ` +
            `is now the primary metric of ${def.scope} ${def.scope_id}`;
        },
      });
    },
  },
  {
    method: "POST",
    path: "/checkpoints/:id/evaluate",
    scope: "read",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        what: `evaluating checkpoint "${id}"`,
        question: `Evaluate checkpoint ${id}?`,
        yes: "Yes, evaluate",
        fallback: "/runs",
        confirm: false,
        run: (fields) => {
          const suite = (fields.suite ?? "").trim() || "heldout";
          const command = (fields.command ?? "").trim() || undefined;
          const request = evaluationRequest.safeParse({ suite, command });
          if (!request.success) throw validationError("evaluation request", request.error);
          const { job } = queueEvaluation(p.ctx, id, request.data, p.principal?.token_id ?? null);
          return `Evaluation "${suite}" of checkpoint ${id} queued as job ${job.id}`;
        },
      });
    },
  },
];
