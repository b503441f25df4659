/**
 * The Experiments page's metric definitions drawer: the definitions at every level, a form to
 * set one (write sessions), and how they resolve for one chosen experiment.
 */
import { MetricKey } from "../islands/_ui.tsx";
import type { MetricDefinition } from "../protocol/objects.ts";
import {
  DEFINITION_SCOPES,
  type DefinitionScope,
  type MetricDirection,
} from "../protocol/vocabulary.ts";
import type { ExperimentsOverview } from "../server/projects/overview.ts";
import { Field, type FormState, href, type View } from "./_experiments_view.tsx";

const LEVEL_ORDER = DEFINITION_SCOPES;

/** A scope as the forms post it: `global`, `project:<name>`, `experiment:<project>/<name>`. */
const scopeValue = (d: Pick<MetricDefinition, "scope" | "scope_id">) =>
  d.scope === "global" ? "global" : `${d.scope}:${d.scope_id}`;

function scopeLabel(level: DefinitionScope | "name" | "default" | null, scopeId: string): string {
  if (level === "global") return "global";
  if (level === "project") return `project ${scopeId}`;
  if (level === "experiment") return `experiment ${scopeId.replace("/", " / ")}`;
  if (level === "name") return "its name";
  if (level === "default") return "no definition: a known loss key of its runs";
  return "nothing (no definition, the name says nothing)";
}

const better = (d: MetricDirection | null) =>
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

export function DefinitionsDrawer(
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
