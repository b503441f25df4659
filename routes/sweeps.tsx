/**
 * `/sweeps`: every sweep with its progress and best trial. `/sweeps/{id}`: one sweep — every
 * trial's curve of the metric overlaid, the trials sorted by the metric with their parameters
 * as columns (stopped ones marked with their rung), a parameter-vs-metric scatter, what
 * mattered, and cancel for write sessions.
 */
import { Island } from "../components/island.tsx";
import SweepCharts, { SWEEP_CURVE_POINTS } from "../islands/SweepCharts.tsx";
import { paramsLabel, sweepView, trialRunIds } from "../islands/_sweep_view.ts";
import { directionArrow, fmtInt, fmtMetric } from "../islands/_format.ts";
import { RelTime, StatusBadge } from "../islands/_ui.tsx";
import type { Sweep } from "../protocol/sweeps.ts";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, pathSegment, shellPage } from "../server/console/shell.tsx";
import { confirmedAction } from "../server/console/actions.tsx";
import { queryMetrics } from "../server/metrics/service.ts";
import { cancelSweep, getSweep, listSweeps } from "../server/sweeps/service.ts";
import { paramText } from "../server/sweeps/trial_job.ts";

function SweepRow({ s, now }: { s: Sweep; now: number }) {
  const done = (s.counts.SUCCEEDED ?? 0) + (s.counts.STOPPED ?? 0) + (s.counts.FAILED ?? 0) +
    (s.counts.CANCELLED ?? 0);
  return (
    <tr>
      <td>
        <a href={`/sweeps/${encodeURIComponent(s.id)}`}>{s.name}</a>
        <div class="muted small">
          <code>{s.id}</code> · {s.project}
          {s.experiment ? ` / ${s.experiment}` : ""}
        </div>
      </td>
      <td>
        <StatusBadge status={s.status} />
      </td>
      <td class="num">{`${done} / ${s.trials.length}`}</td>
      <td>
        <code>{s.metric.key} {directionArrow(s.metric.direction)}</code>
      </td>
      <td class="num">
        {s.best ? <strong>{fmtMetric(s.best.value)}</strong> : "–"}
        {s.best && <div class="muted small">{paramsLabel(s.best.params)}</div>}
      </td>
      <td>
        <RelTime at={s.created_at} now={now} />
      </td>
    </tr>
  );
}

async function sweepCharts(p: Parameters<PageRoute["handler"]>[0], s: Sweep) {
  const runs = trialRunIds(s);
  const answer = runs.length
    ? await queryMetrics(p.ctx, { runs, keys: [s.metric.key], max_points: SWEEP_CURVE_POINTS })
    : { series: [] };
  const { series, scatter } = sweepView(s, answer.series);
  return (
    <Island
      component={SweepCharts}
      props={{
        metric: s.metric.key,
        direction: s.metric.direction,
        sweep_id: s.id,
        series,
        scatter,
        live: s.status === "RUNNING",
      }}
    />
  );
}

function TrialsTable({ s }: { s: Sweep }) {
  const names = Object.keys(s.parameters);
  const min = s.metric.direction === "min";
  const rank = (v: number | null) => v === null ? Infinity : min ? v : -v;
  const trials = [...s.trials].sort((a, b) => rank(a.metric.best) - rank(b.metric.best));
  return (
    <section class="panel">
      <h2>Trials, best first</h2>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th class="num">#</th>
              {names.map((n) => <th key={n} class="num">{n}</th>)}
              <th>Status</th>
              <th class="num">Best {directionArrow(s.metric.direction)}</th>
              <th class="num">Latest</th>
              <th class="num">Step</th>
              <th>Run</th>
            </tr>
          </thead>
          <tbody>
            {trials.map((t) => (
              <tr key={t.index}>
                <td class="num">{t.index + 1}</td>
                {names.map((n) => <td key={n} class="num">{paramText(t.params[n])}</td>)}
                <td>
                  <StatusBadge status={t.status} />
                  {t.stopped_at !== null && (
                    <span class="muted small" title={t.stop_reason ?? ""}>
                      {` at step ${t.stopped_at}`}
                    </span>
                  )}
                </td>
                <td class="num">
                  {s.best?.index === t.index
                    ? <strong>{fmtMetric(t.metric.best)} ★</strong>
                    : fmtMetric(t.metric.best)}
                </td>
                <td class="num">{fmtMetric(t.metric.latest)}</td>
                <td class="num">{t.metric.step === null ? "–" : fmtInt(t.metric.step)}</td>
                <td>
                  {t.run_id
                    ? (
                      <a href={`/runs/${encodeURIComponent(t.run_id)}`}>
                        <code>{t.run_id}</code>
                      </a>
                    )
                    : <span class="muted">not started</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

export const routes: PageRoute[] = [
  {
    method: "GET",
    path: "/sweeps",
    scope: "read",
    handler: (p) => {
      const sweeps = listSweeps(p.ctx, { limit: 100 }).items;
      const now = nowMs(p.ctx);
      return shellPage(
        p,
        { title: "Sweeps", path: "/sweeps" },
        sweeps.length === 0
          ? (
            <p class="panel muted empty">
              No sweeps yet. Start one with{" "}
              <code>gpuctl sweep create -n lr --param lr=1e-4:1e-2:log:5 -- python train.py</code>
              {" "}
              or the <code>create_sweep</code> MCP tool.
            </p>
          )
          : (
            <section class="panel">
              <div class="table-wrap">
                <table>
                  <thead>
                    <tr>
                      <th>Sweep</th>
                      <th>Status</th>
                      <th class="num">Trials done</th>
                      <th>Metric</th>
                      <th class="num">Best</th>
                      <th>Created</th>
                    </tr>
                  </thead>
                  <tbody>{sweeps.map((s) => <SweepRow key={s.id} s={s} now={now} />)}</tbody>
                </table>
              </div>
            </section>
          ),
      );
    },
  },
  {
    method: "GET",
    path: "/sweeps/:id",
    scope: "read",
    handler: async (p) => {
      const s = getSweep(p.ctx, pathSegment(p, 1));
      const importance = s.importance.filter((x) => x.correlation !== null);
      return shellPage(
        p,
        {
          title: `Sweep ${s.name}`,
          path: "/sweeps",
          action: p.canWrite && s.status === "RUNNING"
            ? (
              <form method="post" action={`/sweeps/${encodeURIComponent(s.id)}/cancel`}>
                <input type="hidden" name="next" value={`/sweeps/${encodeURIComponent(s.id)}`} />
                <button type="submit" class="danger">Cancel sweep</button>
              </form>
            )
            : undefined,
        },
        <>
          <section class="panel">
            <p>
              <StatusBadge status={s.status} /> {s.summary}
            </p>
            {importance.length > 1 && (
              <p class="small">
                What mattered (rank correlation with {s.metric.key}):{" "}
                {importance.map((x) => `${x.parameter} ${x.correlation}`).join(", ")}
              </p>
            )}
          </section>
          {await sweepCharts(p, s)}
          <TrialsTable s={s} />
        </>,
      );
    },
  },
  {
    method: "POST",
    path: "/sweeps/:id/cancel",
    scope: "write",
    action: "cancelling a sweep",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        question:
          `Cancel sweep ${id}? No more trials start; queued and running trials are cancelled.`,
        yes: "Yes, cancel the sweep",
        fallback: `/sweeps/${encodeURIComponent(id)}`,
        run: () => {
          const s = cancelSweep(p.ctx, id, p.principal!.name);
          return `Sweep "${s.name}" cancelled`;
        },
      });
    },
  },
];
