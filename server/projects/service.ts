/**
 * Projects, experiments and metric definitions as every face (REST, console, MCP, CLI) reads
 * and changes them. Each function takes the context and the zod-parsed input of its schema in
 * protocol/rest/projects.ts, and returns exactly the REST body.
 */
import type {
  Experiment,
  ExperimentSummary,
  MetricDefinition,
  Page,
  Project,
  ProjectSummary,
  ScopeActivity,
} from "../../protocol/objects.ts";
import type {
  ExperimentCreate,
  ExperimentsQuery,
  MetricDefinitionIn,
  PrimaryMetricSet,
  ProjectCreate,
} from "../../protocol/rest/projects.ts";
import type { RunStatus } from "../../protocol/vocabulary.ts";
import { projects as projectsDb } from "../db/mod.ts";
import type { Database } from "../db/mod.ts";
import type { Context } from "../context.ts";
import { invalidField, notFound, quoted } from "../errors.ts";
import { keyDirection, resolvePrimaryKey } from "../metrics/primary_metric.ts";

/**
 * Creates the project, and the experiment when one is named, on first use; used by every
 * path that can bring a new name in (job submission, SDK runs, imports). Call it inside the
 * caller's transaction.
 */
export function ensureProjectAndExperiment(
  ctx: Context,
  names: { project: string; experiment?: string | null },
  at: string,
): void {
  projectsDb.ensureProject(ctx.db, names.project, at);
  if (names.experiment) {
    projectsDb.ensureExperiment(ctx.db, {
      id: ctx.newId("e"),
      project: names.project,
      name: names.experiment,
    }, at);
  }
}

/** `GET /api/projects`: every project with its runs by status, best primary value and activity. */
export function listProjects(ctx: Context): Page<ProjectSummary> {
  const counts = runCounts(ctx.db);
  const definitions = projectsDb.listMetricDefinitions(ctx.db);
  const items = projectsDb.listProjects(ctx.db).map((p) => ({
    ...p,
    ...activityOf(ctx.db, p, { project: p.name }, counts, definitions, p.primary_metric, null),
  }));
  return { items, next_cursor: null };
}

/** `POST /api/projects`: creates a project, or updates the fields given; `created` says which. */
export function createProject(
  ctx: Context,
  input: ProjectCreate,
): { project: Project; created: boolean } {
  const at = ctx.now().toISOString();
  return ctx.db.tx(() => {
    const created = projectsDb.getProject(ctx.db, input.name) === null;
    projectsDb.upsertProject(ctx.db, input, at);
    return { project: projectsDb.getProject(ctx.db, input.name)!, created };
  });
}

/**
 * `GET /api/experiments`: experiments (of one project when `project` is given, which must
 * exist), each with its runs by status, best primary value and last activity.
 */
export function listExperiments(ctx: Context, query: ExperimentsQuery): Page<ExperimentSummary> {
  if (query.project !== undefined && projectsDb.getProject(ctx.db, query.project) === null) {
    throw notFound("Project", query.project);
  }
  const counts = runCounts(ctx.db);
  const definitions = projectsDb.listMetricDefinitions(ctx.db);
  const projectPrimary = new Map(
    projectsDb.listProjects(ctx.db).map((p) => [p.name, p.primary_metric]),
  );
  const items = projectsDb.listExperiments(ctx.db, query.project).map((e) => ({
    ...e,
    ...activityOf(
      ctx.db,
      e,
      { project: e.project, experiment: e.name },
      counts,
      definitions,
      projectPrimary.get(e.project) ?? null,
      e.primary_metric,
    ),
  }));
  return { items, next_cursor: null };
}

/**
 * `POST /api/experiments`: creates an experiment in an existing project, or updates the fields
 * given; `created` says which.
 */
export function createExperiment(
  ctx: Context,
  input: ExperimentCreate,
): { experiment: Experiment; created: boolean } {
  const at = ctx.now().toISOString();
  return ctx.db.tx(() => {
    if (!projectsDb.getProject(ctx.db, input.project)) throw notFound("Project", input.project);
    const created = projectsDb.ensureExperiment(ctx.db, { id: ctx.newId("e"), ...input }, at);
    if (!created) projectsDb.updateExperiment(ctx.db, input, at);
    return {
      experiment: projectsDb.getExperiment(ctx.db, input.project, input.name)!,
      created,
    };
  });
}

/** `GET /api/metric-definitions`: every definition, by scope, scope id and key. */
export function getMetricDefinitions(ctx: Context): Page<MetricDefinition> {
  return { items: projectsDb.listMetricDefinitions(ctx.db), next_cursor: null };
}

/**
 * `PUT /api/metric-definitions`: stores each definition (all or none); a primary one demotes
 * the other primaries of its scope. Answers with every definition.
 */
export function setMetricDefinitions(
  ctx: Context,
  input: { definitions: MetricDefinitionIn[] },
): Page<MetricDefinition> {
  const at = ctx.now().toISOString();
  ctx.db.tx(() => {
    input.definitions.forEach((d, i) => {
      const def: MetricDefinition = {
        scope: d.scope,
        scope_id: d.scope === "global" ? "" : d.scope_id ?? "",
        key: d.key,
        direction: d.direction,
        primary: d.primary ?? false,
      };
      checkScopeExists(ctx.db, def, `definitions.${i}.scope_id`, "metric definitions");
      projectsDb.putMetricDefinition(ctx.db, def, at);
    });
  });
  return getMetricDefinitions(ctx);
}

/**
 * `PUT /api/metric-definitions/primary`: makes `key` the primary metric of a scope (the other
 * primaries of that scope stop being primary). Without `direction`, the key keeps the
 * direction it has in that scope (its definitions, then its name); a key whose direction
 * nothing tells must come with one. Answers with the stored definition.
 */
export function setPrimaryMetric(ctx: Context, input: PrimaryMetricSet): MetricDefinition {
  const where = "primary metric";
  const scopeId = input.scope === "global" ? "" : input.scope_id ?? "";
  const at = ctx.now().toISOString();
  return ctx.db.tx(() => {
    const def = { scope: input.scope, scope_id: scopeId, key: input.key, primary: true };
    checkScopeExists(ctx.db, def, "scope_id", where);
    const direction = input.direction ??
      keyDirection(runScopeOf(def), projectsDb.listMetricDefinitions(ctx.db), input.key);
    if (direction === null) {
      throw invalidField(
        where,
        "direction",
        `nothing tells which way is better for ${quoted(input.key)}: give "min" or "max"`,
      );
    }
    const stored: MetricDefinition = { ...def, direction };
    projectsDb.putMetricDefinition(ctx.db, stored, at);
    return stored;
  });
}

/** The project and experiment a definition's scope names (global: none). */
function runScopeOf(d: Pick<MetricDefinition, "scope" | "scope_id">) {
  if (d.scope === "global") return { project: "", experiment: null };
  if (d.scope === "project") return { project: d.scope_id, experiment: null };
  const slash = d.scope_id.indexOf("/");
  return { project: d.scope_id.slice(0, slash), experiment: d.scope_id.slice(slash + 1) };
}

/** A definition's project or experiment must exist; `field` names its scope_id in the input. */
function checkScopeExists(
  db: Database,
  d: Pick<MetricDefinition, "scope" | "scope_id">,
  field: string,
  where: string,
): void {
  if (d.scope === "project" && !projectsDb.getProject(db, d.scope_id)) {
    throw invalidField(where, field, `project ${quoted(d.scope_id)} does not exist`);
  }
  if (d.scope === "experiment") {
    const slash = d.scope_id.indexOf("/");
    if (slash < 1) {
      throw invalidField(
        where,
        field,
        `must be "<project>/<experiment>", got ${quoted(d.scope_id)}`,
      );
    }
    const [p, e] = [d.scope_id.slice(0, slash), d.scope_id.slice(slash + 1)];
    if (!projectsDb.getExperiment(db, p, e)) {
      throw invalidField(where, field, `experiment ${quoted(d.scope_id)} does not exist`);
    }
  }
}

/** Run counts keyed by `project` and by `project/experiment`. */
type RunCounts = Map<string, Partial<Record<RunStatus, number>>>;

function runCounts(db: Database): RunCounts {
  const out: RunCounts = new Map();
  const add = (k: string, status: RunStatus, n: number) => {
    const m = out.get(k) ?? {};
    m[status] = (m[status] ?? 0) + n;
    out.set(k, m);
  };
  for (const r of projectsDb.countRunsByStatus(db)) {
    add(r.project, r.status as RunStatus, r.n);
    if (r.experiment !== null) add(`${r.project}/${r.experiment}`, r.status as RunStatus, r.n);
  }
  return out;
}

/** The runs, best primary value and last activity of a project or an experiment. */
function activityOf(
  db: Database,
  record: { updated_at: string },
  scope: projectsDb.RunScopeFilter,
  counts: RunCounts,
  definitions: MetricDefinition[],
  projectPrimary: string | null,
  experimentPrimary: string | null,
): ScopeActivity {
  const countKey = scope.experiment === undefined
    ? scope.project
    : `${scope.project}/${scope.experiment}`;
  const byStatus = counts.get(countKey) ?? {};
  const total = Object.values(byStatus).reduce((a, n) => a + (n ?? 0), 0);
  const primary = resolvePrimaryKey(
    {
      project: scope.project,
      experiment: scope.experiment ?? null,
      projectPrimary,
      experimentPrimary,
    },
    definitions,
    total > 0 ? projectsDb.scopeMetricKeys(db, scope) : [],
  );
  const best = primary && total > 0
    ? projectsDb.bestScopeValue(db, scope, primary.key, primary.direction)
    : null;
  const last = total > 0
    ? projectsDb.scopeLastActivity(db, scope)
    : { run_updated_at: null, last_wall_time: null };
  const times = [record.updated_at, last.run_updated_at].filter((t): t is string => t !== null);
  const pointAt = last.last_wall_time === null ? null : new Date(last.last_wall_time * 1000);
  // A wall time far outside the calendar (the SDK sends what it is given) is no activity time.
  if (pointAt !== null && Number.isFinite(pointAt.getTime())) times.push(pointAt.toISOString());
  return {
    runs: { total, by_status: byStatus },
    best_primary: primary
      ? {
        ...primary,
        value: best?.value ?? null,
        run_id: best?.run_id ?? null,
        step: best?.step ?? null,
      }
      : null,
    last_activity_at: times.reduce((a, b) => (b > a ? b : a)),
  };
}
