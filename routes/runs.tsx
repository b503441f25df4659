/**
 * `/runs`: runs grouped by project and experiment, each with status, progress, the best and
 * latest value of its primary metric and its source; filters and search live in the URL.
 */
import { directionArrow, fmtMetric, fmtProgress, progressFraction } from "../islands/_format.ts";
import { Bar, RelTime, RunDot, StatusBadge } from "../islands/_ui.tsx";
import type { Run } from "../protocol/objects.ts";
import { RUN_STATUSES, runListQuery } from "../protocol/rest.ts";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, queryFilters, shellPage } from "../server/console/shell.tsx";
import { listRunGroups, listRuns } from "../server/runs/service.ts";

/** Runs the page lists at most. */
const RUNS_SHOWN = 500;

const FILTERS = ["q", "status", "project", "experiment", "source"] as const;

function RunRow({ r, now }: { r: Run; now: number }) {
  const pm = r.primary_metric;
  return (
    <tr data-run={r.id}>
      <td>
        <StatusBadge status={r.status} />
      </td>
      <td class="run-name">
        <RunDot id={r.id} /> <a href={`/runs/${encodeURIComponent(r.id)}`}>{r.name}</a>
        <div class="muted small">
          <code class="id">{r.id}</code>
        </div>
      </td>
      <td class="progress-cell">
        <Bar
          fraction={progressFraction(r.step, r.max_steps)}
          tone={r.status === "SUCCEEDED" ? "util" : "running"}
        />
        <span class="small">{fmtProgress(r.step, r.max_steps)}</span>
      </td>
      <td>
        {pm ? <code>{pm.key} {directionArrow(pm.direction)}</code> : <span class="muted">–</span>}
      </td>
      <td class="num">
        <strong>{fmtMetric(pm?.best)}</strong>
      </td>
      <td class="num">{fmtMetric(pm?.latest)}</td>
      <td>{r.source}</td>
      <td>
        <RelTime at={r.started_at ?? r.created_at} now={now} />
      </td>
    </tr>
  );
}

export const runsRoutes: PageRoute[] = [{
  method: "GET",
  path: "/runs",
  scope: "read",
  handler: (p) => {
    const raw = queryFilters(p, FILTERS);
    // A filter the list does not know (a mistyped status) is dropped rather than refused.
    const parsed = runListQuery.safeParse(raw);
    const query = parsed.success ? parsed.data : {};
    const runs = listRuns(p.ctx, { ...query, limit: RUNS_SHOWN }).items;
    const groups = listRunGroups(p.ctx, query).groups;
    const now = nowMs(p.ctx);
    const filtered = Object.keys(raw).length > 0;
    const v = (f: string) => (query as Record<string, string | undefined>)[f] ?? "";
    return shellPage(
      p,
      {
        title: "Runs",
        path: "/runs",
        action: <a class="button primary" href="/jobs?submit=1#submit">+ submit job</a>,
      },
      <>
        <form method="get" action="/runs" class="filters">
          <label>
            Search
            <input
              type="search"
              name="q"
              value={v("q")}
              placeholder="name or id  ( / )"
              data-search
            />
          </label>
          <label>
            Status
            <select name="status">
              <option value="">any</option>
              {RUN_STATUSES.map((s) => (
                <option key={s} value={s} selected={s === v("status")}>{s}</option>
              ))}
            </select>
          </label>
          <label>
            Project
            <input name="project" value={v("project")} placeholder="any" />
          </label>
          <label>
            Experiment
            <input name="experiment" value={v("experiment")} placeholder="any" />
          </label>
          <label>
            Source
            <select name="source">
              <option value="">any</option>
              {["job", "sdk", "import"].map((s) => (
                <option value={s} selected={s === v("source")}>{s}</option>
              ))}
            </select>
          </label>
          <button type="submit">Filter</button>
          {filtered && <a href="/runs">clear</a>}
        </form>
        {runs.length === 0 && (
          <p class="panel muted empty">
            {filtered
              ? "No run matches these filters."
              : "No runs yet. A job's attempt is a run; so is a script that calls run.init() from the SDK, and an imported TensorBoard folder (gpuctl import-run)."}
          </p>
        )}
        {groups.map((g) => {
          const mine = runs.filter((r) => r.project === g.project && r.experiment === g.experiment);
          if (!mine.length) return null;
          return (
            <section class="panel run-group">
              <h2>
                {g.project} / {g.experiment ?? <span class="muted">no experiment</span>}{" "}
                <span class="muted small">
                  {g.runs} run{g.runs === 1 ? "" : "s"} ·{" "}
                  {Object.entries(g.by_status).map(([s, n]) => `${n} ${s.toLowerCase()}`).join(
                    ", ",
                  )}
                </span>
              </h2>
              <div class="table-wrap">
                <table class="runs-table">
                  <thead>
                    <tr>
                      <th>Status</th>
                      <th>Run</th>
                      <th>Progress</th>
                      <th>Primary metric</th>
                      <th class="num">Best</th>
                      <th class="num">Latest</th>
                      <th>Source</th>
                      <th>Started</th>
                    </tr>
                  </thead>
                  <tbody>{mine.map((r) => <RunRow key={r.id} r={r} now={now} />)}</tbody>
                </table>
              </div>
            </section>
          );
        })}
      </>,
    );
  },
}];
