/**
 * `/experiments/{id}`: an experiment's workspace — its metrics' panels over the runs it
 * draws, and the runs ranked by the primary metric. The URL's `?metrics=&runs=&smooth=&x=`
 * pick the view, so the server's first paint is already the view a shared link names.
 */
import { Island } from "../components/island.tsx";
import Workspace from "../islands/Workspace.tsx";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, pathSegment, shellPage } from "../server/console/shell.tsx";
import { loadWorkspace, MAX_WORKSPACE_RUNS } from "../server/console/workspace.ts";
import { experimentLineage } from "../server/lineage/service.ts";
import { LineageTree } from "./run/lineage.tsx";

export const routes: PageRoute[] = [{
  method: "GET",
  path: "/experiments/:id",
  scope: "read",
  handler: async (p) => {
    const d = await loadWorkspace(p.ctx, pathSegment(p, 1), p.url.searchParams);
    const { project, name, description } = d.experiment;
    const lineage = experimentLineage(p.ctx, project, name);
    const runsQuery = new URLSearchParams({
      project,
      experiment: name,
      limit: String(MAX_WORKSPACE_RUNS),
    }).toString();
    return shellPage(
      p,
      {
        title: `${project} / ${name}`,
        path: "/experiments",
        heading: (
          <span>
            <a href="/experiments" class="muted">Experiments</a> / {project} / {name}
          </span>
        ),
      },
      <>
        <p class="muted small">
          {description && `${description} · `}
          <a href={`/runs?${new URLSearchParams({ project, experiment: name })}`}>
            these runs in the Runs list
          </a>
        </p>
        {d.runs.length === 0
          ? (
            <p class="panel muted empty">
              No runs in this experiment yet. Submit a job into it with{" "}
              <code>
                gpuctl job submit --project {project} --experiment {name} -g 1 -- python train.py
              </code>, or log one from a script with{" "}
              <code>run.init(project="{project}", experiment="{name}")</code>.
            </p>
          )
          : (
            <>
              {d.truncated && (
                <p class="small muted">
                  Showing the newest {MAX_WORKSPACE_RUNS} runs; the Runs list has them all.
                </p>
              )}
              <Island
                component={Workspace}
                props={{
                  primary: d.primary,
                  keys: d.keys,
                  runs: d.runs,
                  view: d.view,
                  series: d.series,
                  seriesKeys: d.seriesKeys,
                  maxPoints: d.maxPoints,
                  topMaxPoints: d.topMaxPoints,
                  density: d.density,
                  runsQuery,
                  now: nowMs(p.ctx),
                }}
              />
              <LineageTree tree={lineage.tree} notes={lineage.notes} now={nowMs(p.ctx)} />
            </>
          )}
      </>,
    );
  },
}];
