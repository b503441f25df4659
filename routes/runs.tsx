/**
 * `/runs`: runs grouped by project and experiment, each with status, progress, the best and
 * latest value of its primary metric and its source; filters and search live in the URL.
 * With `where` (query_runs' JSON filter: config, metrics, mark, parent, time) or `order_by`,
 * the list is `query_runs`' answer, in its order.
 */
import { Island } from "../components/island.tsx";
import RunGroups, { type RunListRow } from "../islands/RunGroups.tsx";
import type { Run } from "../protocol/objects.ts";
import { runListQuery } from "../protocol/rest/runs.ts";
import { RUN_SOURCES, RUN_STATUSES } from "../protocol/vocabulary.ts";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, queryFilters, shellPage } from "../server/console/shell.tsx";
import { listRuns } from "../server/runs/service.ts";
import { queryRuns } from "../server/runs/query.ts";
import { MAX_WHERE_CHARS, runsPageQuery } from "../server/console/runs_query.ts";
import type { RunQuery, RunQueryResult } from "../protocol/run_query.ts";

/** Runs the page lists at most. */
const RUNS_SHOWN = 500;

const FILTERS = ["q", "status", "project", "experiment", "source"] as const;

const rowOf = (r: Run): RunListRow => ({
  id: r.id,
  name: r.name,
  project: r.project,
  experiment: r.experiment,
  status: r.status,
  source: r.source,
  step: r.step,
  max_steps: r.max_steps,
  created_at: r.created_at,
  started_at: r.started_at,
  primary_metric: r.primary_metric,
});

export const routes: PageRoute[] = [{
  method: "GET",
  path: "/runs",
  scope: "read",
  handler: (p) => {
    const raw = queryFilters(p, FILTERS);
    // A filter the list does not know (a mistyped status) is dropped rather than refused.
    const parsed = runListQuery.safeParse(raw);
    const query = parsed.success ? parsed.data : {};
    const whereText = p.url.searchParams.get("where")?.trim().slice(0, MAX_WHERE_CHARS + 1) ?? "";
    const orderBy = p.url.searchParams.get("order_by")?.trim().slice(0, 300) ?? "";
    // With `where` or `order_by` the list is query_runs' answer (the same as the API's).
    const asked = whereText || orderBy
      ? runsPageQuery({ ...query, where: whereText, order_by: orderBy }, RUNS_SHOWN)
      : null;
    let answer: RunQueryResult | null = null;
    let runQueryBody: RunQuery | null = null;
    if (asked && "query" in asked) {
      runQueryBody = asked.query;
      answer = queryRuns(p.ctx, asked.query);
    }
    const problem = asked && "error" in asked ? asked.error : null;
    const runs = asked
      ? answer?.items ?? []
      : listRuns(p.ctx, { ...query, limit: RUNS_SHOWN }).items;
    const now = nowMs(p.ctx);
    const filtered = Object.keys(raw).length > 0 || asked !== null;
    const v = (f: string) => (query as Record<string, string | undefined>)[f] ?? "";
    return shellPage(
      p,
      {
        title: "Runs",
        path: "/runs",
        ...(problem ? { status: 400 } : {}),
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
              {RUN_SOURCES.map((s) => (
                <option key={s} value={s} selected={s === v("source")}>{s}</option>
              ))}
            </select>
          </label>
          <label class="wide">
            Where (query_runs JSON)
            <input
              name="where"
              value={whereText}
              placeholder='{"config": {"lr": {"lt": 0.01}}, "metrics": {"eval/loss": {"best": {"lt": 0.3}}}}'
              aria-invalid={problem?.startsWith("where") ? "true" : undefined}
              data-where
            />
          </label>
          <label>
            Order by
            <input name="order_by" value={orderBy} placeholder="metric.eval/loss.best" />
          </label>
          <button type="submit">Filter</button>
          {filtered && <a href="/runs">clear</a>}
        </form>
        {problem && <p class="field-error" role="alert" data-query-error>{problem}</p>}
        {answer && (raw.q || raw.source) && (
          <p class="muted small">search and source apply to the plain list only</p>
        )}
        {runs.length === 0 && !problem && (
          <p class="panel muted empty">
            {filtered
              ? "No run matches these filters."
              : "No runs yet. A job's attempt is a run; so is a script that calls run.init() from the SDK, and an imported TensorBoard folder (gpuctl import-run)."}
          </p>
        )}
        <Island
          component={RunGroups}
          props={{
            runs: runs.map(rowOf),
            query: new URLSearchParams({
              ...Object.fromEntries(
                Object.entries(query).filter(([, x]) => typeof x === "string"),
              ),
              limit: String(RUNS_SHOWN),
            }).toString(),
            now,
            ...(runQueryBody ? { runQuery: runQueryBody } : {}),
            ...(answer
              ? {
                counts: {
                  matched: answer.matched,
                  scanned: answer.scanned,
                  truncated: answer.truncated,
                },
              }
              : {}),
          }}
        />
      </>,
    );
  },
}];
