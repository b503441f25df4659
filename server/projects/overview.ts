/**
 * The experiments list as the console shows it: every project (for its filter chips) and the
 * experiments that match a project and a search, most recently active first.
 */
import type { ExperimentSummary, ProjectSummary } from "../../protocol/objects.ts";
import type { Context } from "../context.ts";
import { listExperiments, listProjects } from "./service.ts";

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
  /** How many experiments there are before filtering. */
  total: number;
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

/** Every project and the experiments matching `filter`; an unknown project matches nothing. */
export function experimentsOverview(ctx: Context, filter: ExperimentsFilter): ExperimentsOverview {
  const all = listExperiments(ctx, {}).items;
  const perProject = new Map<string, number>();
  for (const e of all) perProject.set(e.project, (perProject.get(e.project) ?? 0) + 1);
  const experiments = all.filter((e) => matchesFilter(e, filter)).sort((a, b) =>
    a.last_activity_at < b.last_activity_at ? 1 : a.last_activity_at > b.last_activity_at ? -1 : 0
  );
  return {
    projects: listProjects(ctx).items.map((p) => ({
      ...p,
      experiments: perProject.get(p.name) ?? 0,
    })),
    experiments,
    total: all.length,
  };
}
