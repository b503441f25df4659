/**
 * The run page's Overview tab: live progress and events while it runs, the failure card of a
 * failed or lost run, else its summary, metrics, config and environment.
 */
import { Island } from "../../components/island.tsx";
import EventFeed from "../../islands/EventFeed.tsx";
import LogTail from "../../islands/LogTail.tsx";
import RunProgress from "../../islands/RunProgress.tsx";
import { fmtInt, fmtProgress, progressFraction } from "../../islands/_format.ts";
import { Bar } from "../../islands/_ui.tsx";
import type { RunDetail } from "../../server/console/run_detail.ts";

import { Chart, Kv, Ticks } from "./_parts.tsx";
import { MetricsTable } from "./metrics.tsx";

export function FailureCard({ d }: { d: RunDetail }) {
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

export function Summary({ d }: { d: RunDetail }) {
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

export function Overview({ d, now }: { d: RunDetail; now: number }) {
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
export function RunEvents({ d, now, limit }: { d: RunDetail; now: number; limit: number }) {
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
