/**
 * `/experiments`: one row per experiment with its runs by status, the primary metric's best
 * value (linking to the run that reached it) and the last activity; project chips and a search
 * kept in the URL (`?project=&q=`), plain links and a GET form that work without JavaScript.
 * Write sessions create a project or an experiment in place, and set metric definitions
 * (direction, primary) at the global, project or experiment level in the drawer, which also
 * shows how they resolve for one chosen experiment (`?resolve=<experiment id>`).
 */
import { z } from "zod";
import { fmtInt, fmtMetric } from "../islands/_format.ts";
import { MetricKey, RelTime } from "../islands/_ui.tsx";
import type { ExperimentSummary } from "../protocol/objects.ts";
import { experimentCreate, metricDefinition, projectCreate } from "../protocol/rest/projects.ts";
import { Notice } from "../server/console/actions.tsx";
import { postedFields, submitForm } from "../server/console/form.ts";
import type { PageRequest, PageRoute } from "../server/console/page.tsx";
import { nowMs, queryFilters, shellPage } from "../server/console/shell.tsx";
import { addExperiment, addProject } from "../server/projects/add.ts";
import {
  experimentIdOf,
  type ExperimentsOverview,
  experimentsOverview,
} from "../server/projects/overview.ts";
import { setMetricDefinitions } from "../server/projects/service.ts";
import { Field, type FormState, href, type View, VIEW_KEYS } from "./_experiments_view.tsx";
import { DefinitionsDrawer } from "./_metric_definitions.tsx";

/** The form field of a problem: a service names the body's (`definitions.0.scope_id`). */
const fieldOf = (path: string) => {
  const last = path.split(".").at(-1) || "form";
  return last === "scope_id" ? "scope" : last;
};

/** Submits one of the page's forms (submitForm); a refusal re-renders the page with it. */
async function submitPageForm<S extends z.ZodType, T>(
  p: PageRequest,
  form: FormState["form"],
  schema: S,
  input: (values: Record<string, string>) => unknown,
  act: (data: z.output<S>) => T,
): Promise<
  { ok: true; result: T; values: Record<string, string> } | { ok: false; page: Response }
> {
  const r = await submitForm(p.req, { fields: postedFields, schema, input, act, fieldOf });
  if (r.ok) return r;
  const values = r.values as Record<string, string>;
  return { ok: false, page: experimentsPage(p, { form, values, errors: r.errors }, 400) };
}

/** Where a form returns to: the page with the view it was posted from and a notice. */
function back(values: Record<string, string>, notice: string, extra: Record<string, string> = {}) {
  const from = new URLSearchParams(values.view ?? "");
  const view: View = {};
  for (const k of VIEW_KEYS) view[k] = from.get(k)?.slice(0, 200) ?? undefined;
  return href({ ...view, ...extra }, { notice }, extra.metrics ? "#metrics" : "");
}

const optional = (s: string | undefined) => (s?.trim() ? s.trim() : undefined);

/** The two create forms, side by side in one drawer. */
function CreateForms(
  { o, view, state, open }: {
    o: ExperimentsOverview;
    view: View;
    state: FormState | null;
    open: boolean;
  },
) {
  const p = state?.form === "project" ? state : null;
  const x = state?.form === "experiment" ? state : null;
  const chosenProject = x?.values.project ?? view.project ?? o.projects[0]?.name;
  const viewField = <input type="hidden" name="view" value={href(view).split("?")[1] ?? ""} />;
  return (
    <details class="panel drawer" id="create" data-drawer open={open}>
      <summary>New project or experiment</summary>
      <div class="exp-create">
        <form method="post" action="/experiments/new-project" novalidate aria-label="New project">
          <h2>New project</h2>
          {viewField}
          {p?.errors.form && <p class="field-error" role="alert">{p.errors.form}</p>}
          <Field id="p-name" name="name" label="Name" placeholder="vision" state={p} />
          <Field
            id="p-description"
            name="description"
            label="Description"
            hint="optional"
            state={p}
          />
          <div class="form-actions">
            <button type="submit" class="primary">Create project</button>
          </div>
        </form>
        <form
          method="post"
          action="/experiments/new"
          novalidate
          aria-label="New experiment"
        >
          <h2>New experiment</h2>
          {viewField}
          {x?.errors.form && <p class="field-error" role="alert">{x.errors.form}</p>}
          <Field id="x-project" name="project" label="Project" state={x}>
            <select
              id="x-project"
              name="project"
              aria-invalid={x?.errors.project ? "true" : undefined}
              aria-describedby={x?.errors.project ? "x-project-error" : undefined}
            >
              {o.projects.length === 0 && <option value="">create a project first</option>}
              {o.projects.map((pr) => (
                <option key={pr.name} value={pr.name} selected={pr.name === chosenProject}>
                  {pr.name}
                </option>
              ))}
            </select>
          </Field>
          <Field id="x-name" name="name" label="Name" placeholder="lr-sweep" state={x} />
          <Field
            id="x-description"
            name="description"
            label="Description"
            hint="optional"
            state={x}
          />
          <div class="form-actions">
            <button type="submit" class="primary" disabled={o.projects.length === 0}>
              Create experiment
            </button>
          </div>
        </form>
      </div>
    </details>
  );
}

function Chips({ o, view }: { o: ExperimentsOverview; view: View }) {
  return (
    <nav class="exp-chips" aria-label="Filter by project">
      <a
        class="exp-chip"
        href={href({ q: view.q })}
        aria-current={view.project ? undefined : "true"}
      >
        All <span class="exp-chip-count">{o.all.length}</span>
      </a>
      {o.projects.map((pr) => (
        <a
          key={pr.name}
          class="exp-chip"
          href={href({ project: pr.name, q: view.q })}
          aria-current={pr.name === view.project ? "true" : undefined}
          title={pr.description || `${pr.runs.total} runs`}
        >
          {pr.name} <span class="exp-chip-count">{pr.experiments}</span>
        </a>
      ))}
    </nav>
  );
}

function Search({ view }: { view: View }) {
  return (
    <form method="get" action="/experiments" class="exp-search" role="search">
      {view.project && <input type="hidden" name="project" value={view.project} />}
      <label for="exp-q" class="sr-only">Search experiments</label>
      <input
        id="exp-q"
        type="search"
        name="q"
        value={view.q ?? ""}
        placeholder="experiment or project  ( / )"
        data-search
      />
      <button type="submit">Search</button>
      {(view.q || view.project) && <a href="/experiments">clear</a>}
      <a class="button" href={href(view, { metrics: "1" }, "#metrics")}>Metric definitions</a>
    </form>
  );
}

/** A count of runs in a status column; the status colour only when there are some. */
function Count({ n, tone }: { n: number; tone: string }) {
  return <td class={`num${n > 0 ? ` exp-count-${tone}` : " muted"}`}>{fmtInt(n)}</td>;
}

function ExperimentRow({ e, now }: { e: ExperimentSummary; now: number }) {
  const s = e.runs.by_status;
  const b = e.best_primary;
  const runs = `/runs?project=${encodeURIComponent(e.project)}&experiment=${
    encodeURIComponent(e.name)
  }`;
  return (
    <tr id={e.id}>
      <td class="exp-name">
        <a href={`/experiments/${encodeURIComponent(e.id)}`}>{e.name}</a>
        {e.description && <div class="muted small">{e.description}</div>}
      </td>
      <td>{e.project}</td>
      <Count n={s.RUNNING ?? 0} tone="running" />
      <Count n={s.SUCCEEDED ?? 0} tone="succeeded" />
      <Count n={(s.FAILED ?? 0) + (s.LOST ?? 0)} tone="failed" />
      <td class="num">
        <a href={runs} title={`every run of ${e.project} / ${e.name}`}>{fmtInt(e.runs.total)}</a>
      </td>
      <td class="num">
        {b?.run_id
          ? (
            <a
              href={`/runs/${encodeURIComponent(b.run_id)}`}
              title={`run ${b.run_id}${b.step === null ? "" : ` at step ${fmtInt(b.step)}`}`}
            >
              <strong>{fmtMetric(b.value)}</strong>
            </a>
          )
          : <span class="muted">–</span>}
      </td>
      <td>
        <MetricKey metric={b} />
      </td>
      <td>
        <RelTime at={e.last_activity_at} now={now} />
      </td>
    </tr>
  );
}

/** Ways a project comes to be, for empty states. */
function HowToCreate({ project, canWrite }: { project?: string; canWrite: boolean }) {
  const p = project ?? "vision";
  return (
    <ul class="exp-howto">
      <li>
        a job:{" "}
        <code class="cmd">
          gpuctl job submit --project {p} --experiment baseline -g 1 -- python train.py
        </code>
      </li>
      <li>
        the SDK in a training script:{" "}
        <code class="cmd">run.init(project="{p}", experiment="baseline")</code>
      </li>
      {canWrite && (
        <li>
          or <a href="?create=1#create">the form above</a>
        </li>
      )}
    </ul>
  );
}

function Empty({ o, view, canWrite }: { o: ExperimentsOverview; view: View; canWrite: boolean }) {
  const project = view.project ? o.projects.find((pr) => pr.name === view.project) : undefined;
  if (o.projects.length === 0) {
    return (
      <section class="panel empty exp-empty">
        <p>
          <strong>No projects yet.</strong>{" "}
          A project and its experiments appear the first time something names them:
        </p>
        <HowToCreate canWrite={canWrite} />
      </section>
    );
  }
  if (view.project && !project) {
    return (
      <section class="panel empty exp-empty">
        <p>
          There is no project named <code>{view.project}</code>.{" "}
          <a href="/experiments">All projects</a>
        </p>
      </section>
    );
  }
  if (view.q) {
    return (
      <section class="panel empty exp-empty">
        <p>
          No experiment{project ? ` of ${project.name}` : ""}{" "}
          has “{view.q}” in its name or its project's.{" "}
          <a href={href({ project: view.project })}>Clear the search</a>
        </p>
      </section>
    );
  }
  return (
    <section class="panel empty exp-empty">
      <p>
        <strong>
          {project ? `Project ${project.name} has no experiments yet.` : "No experiments yet."}
        </strong>{" "}
        An experiment groups runs that are compared with each other; it appears with its first run:
      </p>
      <HowToCreate project={project?.name} canWrite={canWrite} />
      {project && project.runs.total > 0 && (
        <p class="muted">
          {project.runs.total === 1
            ? "Its one run so far belongs to no experiment: "
            : `Its ${fmtInt(project.runs.total)} runs so far belong to no experiment: `}
          <a href={`/runs?project=${encodeURIComponent(project.name)}`}>see them in Runs</a>.
        </p>
      )}
    </section>
  );
}

function experimentsPage(p: PageRequest, state: FormState | null = null, status = 200): Response {
  const view: View = queryFilters(p, VIEW_KEYS);
  const o = experimentsOverview(p.ctx, { project: view.project, q: view.q }, view.resolve);
  const now = nowMs(p.ctx);
  const q = p.url.searchParams;
  const creating = q.has("create") || state?.form === "project" || state?.form === "experiment" ||
    o.projects.length === 0;
  const defining = q.has("metrics") || q.has("resolve") || state?.form === "definition";
  return shellPage(
    p,
    {
      title: "Experiments",
      path: "/experiments",
      status,
      action: (
        <a class="button primary" href={href(view, { create: "1" }, "#create")}>
          + new project or experiment
        </a>
      ),
    },
    <>
      <Notice url={p.url} req={p.req} />
      {p.canWrite && <CreateForms o={o} view={view} state={state} open={creating} />}
      <div class="exp-filters">
        {o.projects.length > 0 && <Chips o={o} view={view} />}
        <Search view={view} />
      </div>
      {o.experiments.length === 0
        ? <Empty o={o} view={view} canWrite={p.canWrite} />
        : (
          <section class="panel">
            <div class="table-wrap">
              <table class="exp-table">
                <thead>
                  <tr>
                    <th>Experiment</th>
                    <th>Project</th>
                    <th class="num">Running</th>
                    <th class="num">Succeeded</th>
                    <th class="num" title="failed or lost">Failed</th>
                    <th class="num">Runs</th>
                    <th class="num">Best</th>
                    <th>Primary metric</th>
                    <th>Last activity</th>
                  </tr>
                </thead>
                <tbody>
                  {o.experiments.map((e) => <ExperimentRow key={e.id} e={e} now={now} />)}
                </tbody>
              </table>
            </div>
          </section>
        )}
      <DefinitionsDrawer o={o} view={view} state={state} canWrite={p.canWrite} open={defining} />
    </>,
  );
}

export const routes: PageRoute[] = [
  { method: "GET", path: "/experiments", scope: "read", handler: (p) => experimentsPage(p) },
  {
    method: "POST",
    path: "/experiments/new-project",
    scope: "write",
    action: "creating a project",
    handler: async (p) => {
      const r = await submitPageForm(p, "project", projectCreate, (v) => ({
        name: v.name?.trim() ?? "",
        description: optional(v.description),
      }), (data) => addProject(p.ctx, data));
      if (!r.ok) return r.page;
      return p.redirect(back(r.values, `Project "${r.result.name}" created`));
    },
  },
  {
    method: "POST",
    path: "/experiments/new",
    scope: "write",
    action: "creating an experiment",
    handler: async (p) => {
      const r = await submitPageForm(p, "experiment", experimentCreate, (v) => ({
        project: v.project?.trim() ?? "",
        name: v.name?.trim() ?? "",
        description: optional(v.description),
      }), (data) => addExperiment(p.ctx, data));
      if (!r.ok) return r.page;
      return p.redirect(
        back(r.values, `Experiment "${r.result.name}" created in ${r.result.project}`),
      );
    },
  },
  {
    method: "POST",
    path: "/experiments/metric-definitions",
    scope: "write",
    action: "setting a metric definition",
    handler: async (p) => {
      const r = await submitPageForm(p, "definition", metricDefinition, (v) => {
        const scope = v.scope ?? "";
        const colon = scope.indexOf(":");
        return {
          scope: colon < 0 ? scope : scope.slice(0, colon),
          scope_id: colon < 0 ? undefined : scope.slice(colon + 1),
          key: v.key?.trim() ?? "",
          direction: v.direction,
          primary: v.primary === "1",
        };
      }, (d) => {
        setMetricDefinitions(p.ctx, { definitions: [d] });
        return d;
      });
      if (!r.ok) return r.page;
      const d = r.result;
      const where = d.scope === "global" ? "global" : `${d.scope} ${d.scope_id}`;
      // An experiment's definition is shown resolving for that experiment.
      const resolve = d.scope === "experiment" ? experimentIdOf(p.ctx, d.scope_id ?? "") : null;
      return p.redirect(
        back(
          r.values,
          `"${d.key}" (${d.direction === "min" ? "lower" : "higher"} is better)${
            d.primary ? " is now the primary metric" : " saved"
          } at ${where}`,
          { metrics: "1", ...(resolve ? { resolve } : {}) },
        ),
      );
    },
  },
];
