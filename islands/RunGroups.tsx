/**
 * The runs list, grouped by project and experiment (the group with the newest run first),
 * each run with status, progress, best and latest of its primary metric and source. Read
 * again when runs start or end and every few seconds while any runs, so progress moves.
 */
import type { MetricDirection } from "../protocol/vocabulary.ts";
import { fmtMetric } from "./_format.ts";
import { type LiveEvent, useJson, useNow } from "./_live.ts";
import { MetricKey, ProgressCell, RelTime, RunNameCell, StatusBadge } from "./_ui.tsx";

export interface RunListRow {
  id: string;
  name: string;
  project: string;
  experiment: string | null;
  status: string;
  source: string;
  step: number | null;
  max_steps: number | null;
  created_at: string;
  started_at: string | null;
  primary_metric:
    | { key: string; direction: MetricDirection; latest: number | null; best: number | null }
    | null;
}

export interface RunGroupsProps {
  runs: RunListRow[];
  /** The list's filters and limit, as `GET /api/runs` takes them. */
  query: string;
  now: number;
  /**
   * A `query_runs` body (`POST /api/runs:query`): the list is its answer, read again from it,
   * and shown in its order as one table.
   */
  runQuery?: Record<string, unknown>;
  /** query_runs' counts as the page was rendered; read again with the list. */
  counts?: QueryCounts;
}

/** How many runs a query matched and looked at (`POST /api/runs:query`'s answer). */
export interface QueryCounts {
  matched: number;
  scanned: number;
  truncated: boolean;
}

const changes = (e: LiveEvent) => e.type.startsWith("RUN_");

/** Runs by project and experiment, in the order of each group's newest run. */
export function groupRuns(runs: RunListRow[]): { key: string; runs: RunListRow[] }[] {
  const groups = new Map<string, RunListRow[]>();
  for (const r of runs) {
    const key = JSON.stringify([r.project, r.experiment]);
    groups.set(key, [...groups.get(key) ?? [], r]);
  }
  return [...groups].map(([key, runs]) => ({ key, runs }));
}

export default function RunGroups(
  { runs: initial, query, now: rendered, runQuery, counts }: RunGroupsProps,
) {
  const answer = useJson<{ items: RunListRow[] } & Partial<QueryCounts>>(
    runQuery ? "/api/runs:query" : `/api/runs?${query}`,
    { items: initial, ...counts },
    {
      refreshOn: changes,
      everyMs: initial.some((r) => r.status === "RUNNING") ? 5_000 : 30_000,
      ...(runQuery ? { body: runQuery } : {}),
    },
  );
  const runs = answer.items;
  const now = useNow(rendered);
  if (runQuery) {
    return (
      <>
        {answer.matched !== undefined && (
          <p class="muted small" data-query-answer>
            {`query_runs: ${answer.matched} matched of ${answer.scanned} looked at` +
              (answer.truncated
                ? " (older runs were not looked at: narrow by project or time)"
                : "")}
          </p>
        )}
        <QueryAnswer runs={runs} now={now} />
      </>
    );
  }
  return (
    <>
      {groupRuns(runs).map(({ key, runs: mine }) => {
        const { project, experiment } = mine[0];
        const counts = new Map<string, number>();
        for (const r of mine) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
        return (
          <section class="panel run-group" key={key}>
            <h2>
              <a
                href={`/runs?project=${encodeURIComponent(project)}${
                  experiment ? `&experiment=${encodeURIComponent(experiment)}` : ""
                }`}
              >
                {project} / {experiment ?? "no experiment"}
              </a>
              <span class="muted small">
                {`${mine.length} run${mine.length === 1 ? "" : "s"} · `}
                {[...counts].map(([s, n]) => `${n} ${s.toLowerCase()}`).join(", ")}
              </span>
            </h2>
            <RunTable runs={mine} now={now} />
          </section>
        );
      })}
    </>
  );
}

/** query_runs' answer: one table in the query's order, each run with its experiment. */
function QueryAnswer({ runs, now }: { runs: RunListRow[]; now: number }) {
  if (runs.length === 0) return null;
  return (
    <section class="panel run-group" data-query-runs>
      <h2>
        {`${runs.length} run${runs.length === 1 ? "" : "s"}`}
        <span class="muted small">in the query's order</span>
      </h2>
      <RunTable runs={runs} now={now} withExperiment />
    </section>
  );
}

/** The runs' table; `withExperiment` adds the column a list of many experiments needs. */
function RunTable(
  { runs, now, withExperiment = false }: {
    runs: RunListRow[];
    now: number;
    withExperiment?: boolean;
  },
) {
  return (
    <div class="table-wrap">
      <table class="runs-table">
        <thead>
          <tr>
            <th>Status</th>
            <th>Run</th>
            {withExperiment && <th>Experiment</th>}
            <th>Progress</th>
            <th>Primary metric</th>
            <th class="num">Best</th>
            <th class="num">Latest</th>
            <th>Source</th>
            <th>Started</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <RunRow
              key={r.id}
              r={r}
              now={now}
              where={withExperiment
                ? `${r.project} / ${r.experiment ?? "no experiment"}`
                : undefined}
            />
          ))}
        </tbody>
      </table>
    </div>
  );
}

function RunRow({ r, now, where }: { r: RunListRow; now: number; where?: string }) {
  const pm = r.primary_metric;
  return (
    <tr data-run={r.id} data-status={r.status}>
      <td>
        <StatusBadge status={r.status} />
      </td>
      <RunNameCell id={r.id} name={r.name} />
      {where !== undefined && <td>{where}</td>}
      <ProgressCell step={r.step} maxSteps={r.max_steps} status={r.status} />
      <td>
        <MetricKey metric={pm} />
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
