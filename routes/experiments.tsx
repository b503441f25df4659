/**
 * `/experiments`: every project and its experiments with their runs by status, the primary
 * metric's best value (and the run that reached it) and the last activity, each linking to its
 * runs.
 */
import type { ComponentChildren } from "preact";
import { directionArrow, fmtMetric } from "../islands/_format.ts";
import { RelTime } from "../islands/_ui.tsx";
import type { ScopeActivity } from "../protocol/objects.ts";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, shellPage } from "../server/console/shell.tsx";
import { listExperiments, listProjects } from "../server/projects/service.ts";

function Activity({ a, href, name, now }: {
  a: ScopeActivity;
  href: string;
  name: ComponentChildren;
  now: number;
}) {
  const b = a.best_primary;
  return (
    <tr>
      <td>
        <a href={href}>{name}</a>
      </td>
      <td class="num">{a.runs.total}</td>
      <td class="small">
        {Object.entries(a.runs.by_status).map(([s, n]) => `${n} ${s.toLowerCase()}`).join(", ") ||
          "–"}
      </td>
      <td>
        {b ? <code>{b.key} {directionArrow(b.direction)}</code> : <span class="muted">–</span>}
      </td>
      <td class="num">
        {b?.run_id
          ? (
            <a href={`/runs/${encodeURIComponent(b.run_id)}`} title={`run ${b.run_id}`}>
              <strong>{fmtMetric(b.value)}</strong>
            </a>
          )
          : "–"}
      </td>
      <td>
        <RelTime at={a.last_activity_at} now={now} />
      </td>
    </tr>
  );
}

export const experimentsRoutes: PageRoute[] = [{
  method: "GET",
  path: "/experiments",
  scope: "read",
  handler: (p) => {
    const projects = listProjects(p.ctx).items;
    const experiments = listExperiments(p.ctx, {}).items;
    const now = nowMs(p.ctx);
    const runs = (project: string, experiment?: string) =>
      `/runs?project=${encodeURIComponent(project)}${
        experiment ? `&experiment=${encodeURIComponent(experiment)}` : ""
      }`;
    return shellPage(
      p,
      { title: "Experiments", path: "/experiments" },
      projects.length === 0
        ? (
          <p class="panel muted empty">
            No projects yet. A job's <code>project</code> and <code>experiment</code> (or the SDK's
            {" "}
            <code>run.init(project=…, experiment=…)</code>) create them on first use.
          </p>
        )
        : (
          <>
            {projects.map((proj) => (
              <section class="panel" key={proj.name}>
                <h2>
                  {proj.name}
                  {proj.description && <span class="muted small">{` · ${proj.description}`}</span>}
                </h2>
                <div class="table-wrap">
                  <table>
                    <thead>
                      <tr>
                        <th>Experiment</th>
                        <th class="num">Runs</th>
                        <th>By status</th>
                        <th>Primary metric</th>
                        <th class="num">Best</th>
                        <th>Last activity</th>
                      </tr>
                    </thead>
                    <tbody>
                      <Activity
                        a={proj}
                        href={runs(proj.name)}
                        name={<span class="muted">all of {proj.name}</span>}
                        now={now}
                      />
                      {experiments.filter((e) => e.project === proj.name).map((e) => (
                        <Activity
                          key={e.id}
                          a={e}
                          href={runs(proj.name, e.name)}
                          name={e.name}
                          now={now}
                        />
                      ))}
                    </tbody>
                  </table>
                </div>
              </section>
            ))}
          </>
        ),
    );
  },
}];
