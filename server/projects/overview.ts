/**
 * The experiments list as the console shows it: every project (for its filter chips), the
 * experiments that match a project and a search, most recently active first, and the metric
 * definitions with how they resolve for one chosen experiment.
 */
import type {
  Experiment,
  ExperimentSummary,
  MetricDefinition,
  ProjectSummary,
} from "../../protocol/objects.ts";
import type { Context } from "../context.ts";
import { experimentMetricResolution, type MetricResolution } from "./resolution.ts";
import { projects as projectsDb } from "../db/mod.ts";
import { notFound } from "../errors.ts";
import { getMetricDefinitions, listExperiments, listProjects } from "./service.ts";

export interface ExperimentsFilter {
  /** Only this project's experiments. */
  project?: string;
  /** Only experiments whose name or project's name holds this text (any case). */
  q?: string;
}

export interface ExperimentsOverview {
  /** Every project, by name, with its experiments counted. */
  projects: (ProjectSummary & { experiments: number })[];
  /** The experiments that match, the most recently active first. */
  experiments: ExperimentSummary[];
  /** Every experiment before filtering (what a definition or the resolution can be about). */
  all: Pick<Experiment, "id" | "project" | "name">[];
  /** Every metric definition, by scope, scope id and key. */
  definitions: MetricDefinition[];
  /**
   * How the definitions resolve for the experiment asked for, else the first one listed;
   * null when there is none.
   */
  resolution:
    | (MetricResolution & { experiment: Pick<Experiment, "id" | "project" | "name"> })
    | null;
}

/** Whether an experiment passes the filter (pure, for the list and its tests). */
export function matchesFilter(
  e: Pick<ExperimentSummary, "project" | "name">,
  f: ExperimentsFilter,
): boolean {
  if (f.project !== undefined && e.project !== f.project) return false;
  const q = f.q?.trim().toLowerCase();
  if (!q) return true;
  return e.name.toLowerCase().includes(q) || e.project.toLowerCase().includes(q);
}

/**
 * Every project, the experiments matching `filter` (an unknown project matches nothing) and
 * the resolution for experiment `resolve` (a 404 when it does not exist).
 */
export function experimentsOverview(
  ctx: Context,
  filter: ExperimentsFilter,
  resolve?: string,
): ExperimentsOverview {
  const all = listExperiments(ctx, {}).items;
  const perProject = new Map<string, number>();
  for (const e of all) perProject.set(e.project, (perProject.get(e.project) ?? 0) + 1);
  const experiments = all.filter((e) => matchesFilter(e, filter)).sort((a, b) =>
    a.last_activity_at < b.last_activity_at ? 1 : a.last_activity_at > b.last_activity_at ? -1 : 0
  );
  const projects = listProjects(ctx).items.map((p) => ({
    ...p,
    experiments: perProject.get(p.name) ?? 0,
  }));
  const definitions = getMetricDefinitions(ctx).items;
  const chosen = resolve === undefined ? experiments[0] : all.find((e) => e.id === resolve);
  if (resolve !== undefined && !chosen) throw notFound("Experiment", resolve);
  const resolution = chosen
    ? {
      experiment: { id: chosen.id, project: chosen.project, name: chosen.name },
      ...experimentMetricResolution(ctx, chosen.id),
    }
    : null;
  return {
    projects,
    experiments,
    all: all.map((e) => ({ id: e.id, project: e.project, name: e.name })),
    definitions,
    resolution,
  };
}

/** The id of the experiment a definition's `"<project>/<experiment>"` names; null when none. */
export function experimentIdOf(ctx: Context, scopeId: string): string | null {
  const slash = scopeId.indexOf("/");
  if (slash < 1) return null;
  const e = projectsDb.getExperiment(ctx.db, scopeId.slice(0, slash), scopeId.slice(slash + 1));
  return e?.id ?? null;
}
