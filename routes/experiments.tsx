/**
 * `/experiments`: one row per experiment with its runs by status, the primary metric's best
 * value (linking to the run that reached it) and the last activity; project chips and a search
 * kept in the URL (`?project=&q=`), plain links and a GET form that work without JavaScript.
 * Write sessions create a project or an experiment in place, and set metric definitions
 * (direction, primary) at the global, project or experiment level in the drawer, which also
 * shows how they resolve for one chosen experiment (`?resolve=<experiment id>`).
 */
import type { ComponentChildren } from "preact";
import { z } from "zod";
import { fmtInt, fmtMetric } from "../islands/_format.ts";
import { MetricKey, RelTime } from "../islands/_ui.tsx";
import type { ExperimentSummary, MetricDefinition } from "../protocol/objects.ts";
import { experimentCreate, metricDefinition, projectCreate } from "../protocol/rest.ts";
import { requireScope } from "../server/auth/require_scope.ts";
import { Notice } from "../server/console/actions.tsx";
import { readForm } from "../server/console/form.ts";
import type { PageRequest, PageRoute } from "../server/console/page.tsx";
import { nowMs, queryFilters, shellPage } from "../server/console/shell.tsx";
import { ValidationError } from "../server/errors.ts";
import { addExperiment, addProject } from "../server/projects/add.ts";
import {
  experimentIdOf,
  type ExperimentsOverview,
  experimentsOverview,
} from "../server/projects/overview.ts";
import type { DefinitionLevel } from "../server/projects/resolution.ts";
import { setMetricDefinitions } from "../server/projects/service.ts";

/** The page's URL state: the project chip, the search, the experiment the resolution is for. */
const VIEW_KEYS = ["project", "q", "resolve"] as const;
type View = Partial<Record<typeof VIEW_KEYS[number], string>>;

/** `/experiments` with `view` and `extra` in its query (empty values left out). */
function href(view: View, extra: Record<string, string | undefined> = {}, hash = ""): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({ ...view, ...extra })) if (v) q.set(k, v);
  const s = q.toString();
  return `/experiments${s ? `?${s}` : ""}${hash}`;
}

/** Which of the page's forms was posted, what was typed and what was wrong, by field. */
interface FormState {
  form: "project" | "experiment" | "definition";
  values: Record<string, string>;
  errors: Record<string, string>;
}

const postedFields = z.record(z.string().max(64), z.string().max(65_536));

/**
 * Reads a posted form, shapes its fields into a service input that crosses `schema` (the REST
 * body's), and acts; every refusal, the schema's or the service's, comes back by field.
 */
async function submitForm<S extends z.ZodType, T>(
  p: PageRequest,
  form: FormState["form"],
  schema: S,
  input: (values: Record<string, string>) => unknown,
  act: (data: z.infer<S>) => T,
): Promise<{ ok: true; result: T; values: Record<string, string> } | FormState & { ok: false }> {
  const read = await readForm(p.req, postedFields);
  if (!read.ok) return { ok: false, form, values: {}, errors: read.errors };
  const values = read.data;
  const errors: Record<string, string> = {};
  // A service names the body's field (`definitions.0.scope_id`); the form has one `scope`.
  const name = (field: string) => {
    const last = field.split(".").at(-1) ?? "form";
    return last === "scope_id" ? "scope" : last;
  };
  const parsed = schema.safeParse(input(values));
  if (!parsed.success) {
    for (const i of parsed.error.issues) errors[name(i.path.map(String).join("."))] ??= i.message;
    return { ok: false, form, values, errors };
  }
  try {
    return { ok: true, result: act(parsed.data), values };
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    for (const d of err.details) errors[name(d.field)] ??= d.problem;
    return { ok: false, form, values, errors };
  }
}

/** Where a form returns to: the page with the view it was posted from and a notice. */
function back(values: Record<string, string>, notice: string, extra: Record<string, string> = {}) {
  const from = new URLSearchParams(values.view ?? "");
  const view: View = {};
  for (const k of VIEW_KEYS) view[k] = from.get(k)?.slice(0, 200) ?? undefined;
  return href({ ...view, ...extra }, { notice }, extra.metrics ? "#metrics" : "");
}

const optional = (s: string | undefined) => (s?.trim() ? s.trim() : undefined);

function Field(
  { id, name, label, hint, state, children, placeholder }: {
    id: string;
    name: string;
    label: string;
    hint?: string;
    state: FormState | null;
    placeholder?: string;
    children?: ComponentChildren;
  },
) {
  const error = state?.errors[name];
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children ?? (
        <input
          id={id}
          name={name}
          value={state?.values[name] ?? ""}
          placeholder={placeholder}
          aria-invalid={error ? "true" : undefined}
          aria-describedby={error ? `${id}-error` : hint ? `${id}-hint` : undefined}
          spellcheck={false}
          autocomplete="off"
        />
      )}
      {error && <p id={`${id}-error`} class="field-error" role="alert">{label} {error}</p>}
      {!error && hint && <span id={`${id}-hint`} class="hint">{hint}</span>}
    </div>
  );
}

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

const LEVEL_ORDER: DefinitionLevel[] = ["global", "project", "experiment"];

/** A scope as the forms post it: `global`, `project:<name>`, `experiment:<project>/<name>`. */
const scopeValue = (d: Pick<MetricDefinition, "scope" | "scope_id">) =>
  d.scope === "global" ? "global" : `${d.scope}:${d.scope_id}`;

function scopeLabel(level: DefinitionLevel | "name" | "default" | null, scopeId: string): string {
  if (level === "global") return "global";
  if (level === "project") return `project ${scopeId}`;
  if (level === "experiment") return `experiment ${scopeId.replace("/", " / ")}`;
  if (level === "name") return "its name";
  if (level === "default") return "no definition: a known loss key of its runs";
  return "nothing (no definition, the name says nothing)";
}

const better = (d: "min" | "max" | null) =>
  d === "min" ? "↓ lower" : d === "max" ? "↑ higher" : "–";

/** A definition's row; write sessions can make its key the primary of its scope. */
function DefinitionRow(
  { d, o, canWrite, viewQuery }: {
    d: MetricDefinition;
    o: ExperimentsOverview;
    canWrite: boolean;
    viewQuery: string;
  },
) {
  const experiment = d.scope === "experiment"
    ? o.all.find((e) => `${e.project}/${e.name}` === d.scope_id)
    : undefined;
  return (
    <tr>
      <td>{d.scope}</td>
      <td>
        {d.scope === "global"
          ? <span class="muted">every run</span>
          : experiment
          ? (
            <a href={`/experiments/${encodeURIComponent(experiment.id)}`}>
              {d.scope_id.replace("/", " / ")}
            </a>
          )
          : d.scope_id}
      </td>
      <td>
        <MetricKey metric={d} />
      </td>
      <td>{better(d.direction)}</td>
      <td>{d.primary ? <span class="badge">primary</span> : ""}</td>
      {canWrite && (
        <td class="row-actions">
          {!d.primary && (
            <form method="post" action="/experiments/metric-definitions" class="inline-form">
              <input type="hidden" name="view" value={viewQuery} />
              <input type="hidden" name="scope" value={scopeValue(d)} />
              <input type="hidden" name="key" value={d.key} />
              <input type="hidden" name="direction" value={d.direction} />
              <input type="hidden" name="primary" value="1" />
              <button type="submit" class="small">Make primary</button>
            </form>
          )}
        </td>
      )}
    </tr>
  );
}

function DefinitionForm(
  { o, view, state, viewQuery }: {
    o: ExperimentsOverview;
    view: View;
    state: FormState | null;
    viewQuery: string;
  },
) {
  const chosen = state?.values.scope ?? (view.project ? `project:${view.project}` : "global");
  const direction = state?.values.direction ?? "min";
  return (
    <form
      method="post"
      action="/experiments/metric-definitions"
      novalidate
      aria-label="Set a metric definition"
      class="exp-def-form"
    >
      <h3>Set a definition</h3>
      <input type="hidden" name="view" value={viewQuery} />
      {state?.errors.form && <p class="field-error" role="alert">{state.errors.form}</p>}
      <div class="form-grid">
        <Field id="d-scope" name="scope" label="Applies to" state={state}>
          <select
            id="d-scope"
            name="scope"
            aria-invalid={state?.errors.scope ? "true" : undefined}
            aria-describedby={state?.errors.scope ? "d-scope-error" : undefined}
          >
            <option value="global" selected={chosen === "global"}>global: every run</option>
            {o.projects.map((pr) => (
              <option
                key={pr.name}
                value={`project:${pr.name}`}
                selected={chosen === `project:${pr.name}`}
              >
                project {pr.name}
              </option>
            ))}
            {o.all.map((e) => {
              const v = `experiment:${e.project}/${e.name}`;
              return (
                <option key={e.id} value={v} selected={chosen === v}>
                  experiment {e.project} / {e.name}
                </option>
              );
            })}
          </select>
        </Field>
        <Field id="d-key" name="key" label="Key" placeholder="eval/accuracy" state={state} />
        <Field id="d-direction" name="direction" label="Better when" state={state}>
          <select id="d-direction" name="direction">
            <option value="min" selected={direction !== "max"}>↓ lower is better</option>
            <option value="max" selected={direction === "max"}>↑ higher is better</option>
          </select>
        </Field>
        <div class="field exp-primary-field">
          <label>
            <input
              type="checkbox"
              name="primary"
              value="1"
              checked={state?.values.primary === "1"}
            />{" "}
            primary metric of this scope
          </label>
          <span class="hint">ranks its runs and checkpoints</span>
        </div>
      </div>
      <div class="form-actions">
        <button type="submit" class="primary">Save definition</button>
      </div>
    </form>
  );
}

function Resolution({ o, view }: { o: ExperimentsOverview; view: View }) {
  const r = o.resolution;
  return (
    <section class="exp-resolution" aria-label="Resolution">
      <h3>How they resolve for an experiment</h3>
      <form method="get" action="/experiments#metrics" class="inline-form">
        {view.project && <input type="hidden" name="project" value={view.project} />}
        {view.q && <input type="hidden" name="q" value={view.q} />}
        <label class="sr-only" for="resolve">Experiment</label>
        <select id="resolve" name="resolve" class="small" autocomplete="off">
          {o.all.map((e) => (
            <option key={e.id} value={e.id} selected={e.id === r?.experiment.id}>
              {e.project} / {e.name}
            </option>
          ))}
        </select>
        <button type="submit" class="small">Show</button>
      </form>
      {!r ? <p class="muted">No experiment yet: the resolution shows once there is one.</p> : (
        <>
          <p class="exp-resolution-primary">
            Experiment{" "}
            <a href={`/experiments/${encodeURIComponent(r.experiment.id)}`}>
              {r.experiment.project} / {r.experiment.name}
            </a>{" "}
            looks up experiment → project → global. Primary metric: {r.primary
              ? (
                <>
                  <MetricKey metric={r.primary} />{" "}
                  <span class="muted">
                    from {scopeLabel(
                      r.primary.from,
                      r.chain.find((c) => c.level === r.primary!.from)?.scope_id ?? "",
                    )}
                  </span>
                </>
              )
              : <span class="muted">none (no definition, no known loss key)</span>}
          </p>
          {r.keys.length === 0
            ? <p class="muted">Its runs have no metrics and no level defines one.</p>
            : (
              <div class="table-wrap">
                <table class="exp-resolution-table">
                  <thead>
                    <tr>
                      <th>Key</th>
                      <th>Better when</th>
                      <th>From</th>
                      <th>Overrides</th>
                    </tr>
                  </thead>
                  <tbody>
                    {r.keys.map((k) => (
                      <tr key={k.key} data-key={k.key}>
                        <td>
                          <code>{k.key}</code>
                          {k.primary && <span class="badge">primary</span>}
                        </td>
                        <td>{better(k.direction)}</td>
                        <td class="exp-from">
                          {scopeLabel(
                            k.from,
                            r.chain.find((c) => c.level === k.from)?.scope_id ?? "",
                          )}
                        </td>
                        <td class="muted small">
                          {k.overridden.map((x) => `${x.level}: ${better(x.direction)}`)
                            .join(", ") || "–"}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            )}
        </>
      )}
    </section>
  );
}

function DefinitionsDrawer(
  { o, view, state, canWrite, open }: {
    o: ExperimentsOverview;
    view: View;
    state: FormState | null;
    canWrite: boolean;
    open: boolean;
  },
) {
  const viewQuery = href(view).split("?")[1] ?? "";
  const defs = [...o.definitions].sort((a, b) =>
    LEVEL_ORDER.indexOf(a.scope) - LEVEL_ORDER.indexOf(b.scope)
  );
  return (
    <details class="panel drawer" id="metrics" data-drawer open={open}>
      <summary>Metric definitions</summary>
      <p class="muted small">
        A definition says which way a key is better and which key is the primary metric, for every
        run (global), a project's or an experiment's; the most specific one wins. A key without one
        goes by its name (<code>loss</code> ↓, <code>acc</code> ↑).
      </p>
      {defs.length === 0
        ? <p class="muted">No definitions yet: every key goes by its name.</p>
        : (
          <div class="table-wrap">
            <table class="exp-defs">
              <thead>
                <tr>
                  <th>Level</th>
                  <th>Applies to</th>
                  <th>Key</th>
                  <th>Better when</th>
                  <th>Primary</th>
                  {canWrite && <th></th>}
                </tr>
              </thead>
              <tbody>
                {defs.map((d) => (
                  <DefinitionRow
                    key={`${d.scope}:${d.scope_id}:${d.key}`}
                    d={d}
                    o={o}
                    canWrite={canWrite}
                    viewQuery={viewQuery}
                  />
                ))}
              </tbody>
            </table>
          </div>
        )}
      {canWrite && <DefinitionForm o={o} view={view} state={state} viewQuery={viewQuery} />}
      <Resolution o={o} view={view} />
    </details>
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
      <Notice url={p.url} />
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

export const experimentsRoutes: PageRoute[] = [
  { method: "GET", path: "/experiments", scope: "read", handler: (p) => experimentsPage(p) },
  {
    method: "POST",
    path: "/experiments/new-project",
    scope: "read",
    handler: async (p) => {
      requireScope(p.principal, "write", "creating a project");
      const r = await submitForm(p, "project", projectCreate, (v) => ({
        name: v.name?.trim() ?? "",
        description: optional(v.description),
      }), (data) => addProject(p.ctx, data));
      if (!r.ok) return experimentsPage(p, r, 400);
      return p.redirect(back(r.values, `Project "${r.result.name}" created`));
    },
  },
  {
    method: "POST",
    path: "/experiments/new",
    scope: "read",
    handler: async (p) => {
      requireScope(p.principal, "write", "creating an experiment");
      const r = await submitForm(p, "experiment", experimentCreate, (v) => ({
        project: v.project?.trim() ?? "",
        name: v.name?.trim() ?? "",
        description: optional(v.description),
      }), (data) => addExperiment(p.ctx, data));
      if (!r.ok) return experimentsPage(p, r, 400);
      return p.redirect(
        back(r.values, `Experiment "${r.result.name}" created in ${r.result.project}`),
      );
    },
  },
  {
    method: "POST",
    path: "/experiments/metric-definitions",
    scope: "read",
    handler: async (p) => {
      requireScope(p.principal, "write", "setting a metric definition");
      const r = await submitForm(p, "definition", metricDefinition, (v) => {
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
      if (!r.ok) return experimentsPage(p, r, 400);
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
