/**
 * How the metric definitions resolve for one experiment's runs, as a person checks it: for
 * each key its runs have or a level of its chain defines, the direction in force and the level
 * it came from (experiment → project → global, then the key's name), with the definitions it
 * overrides; and the primary metric with the level that named it. The rules themselves are
 * server/metrics/primary_metric.ts; this only reports where each answer came from.
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { MetricDefinition } from "../../protocol/objects.ts";
import type { Context } from "../context.ts";
import { projects as projectsDb } from "../db/mod.ts";
import { notFound } from "../errors.ts";
import {
  keyDirectionSource,
  resolvePrimarySource,
  type RunScope,
  scopeChain,
} from "../metrics/primary_metric.ts";

export type DefinitionLevel = MetricDefinition["scope"];

/** One key as it resolves in the experiment. */
export interface ResolvedKey {
  key: string;
  /** The direction in force; null when no definition and not the name tells. */
  direction: MetricDirection | null;
  /** Where the direction came from: a level's definition, or the key's name. */
  from: DefinitionLevel | "name" | null;
  /** Definitions of the key at less specific levels, which the one in force overrides. */
  overridden: { level: DefinitionLevel; direction: MetricDirection }[];
  /** Whether the key is the experiment's primary metric. */
  primary: boolean;
}

export interface MetricResolution {
  /** The levels asked, most specific first, with the scope id each stores definitions under. */
  chain: { level: DefinitionLevel; scope_id: string }[];
  /** The primary metric and where it was named (`default`: a known key of the runs). */
  primary:
    | { key: string; direction: MetricDirection; from: DefinitionLevel | "default" }
    | null;
  /** The primary first, then by key. */
  keys: ResolvedKey[];
}

/** The resolution of every key `runKeys` holds or the scope's chain defines (sys/* left out). */
export function resolveMetricDefinitions(
  scope: RunScope,
  definitions: readonly MetricDefinition[],
  runKeys: readonly string[],
): MetricResolution {
  const chain = scopeChain(scope).map(([level, scope_id]) => ({ level, scope_id }));
  const inChain = definitions.filter((d) =>
    chain.some((c) => c.level === d.scope && c.scope_id === d.scope_id)
  );
  const userKeys = runKeys.filter((k) => !k.startsWith("sys/"));
  const primary = resolvePrimarySource(scope, definitions, userKeys);
  const keys = new Set([...userKeys, ...inChain.map((d) => d.key)]);
  if (primary) keys.add(primary.key);
  const resolved = [...keys].map((key): ResolvedKey => {
    const source = keyDirectionSource(scope, definitions, key);
    const levels = chain.map((c) => c.level);
    const at = source && source.from !== "name" ? levels.indexOf(source.from) : levels.length;
    const overridden = chain.slice(at + 1).flatMap((c) => {
      const d = inChain.find((x) =>
        x.scope === c.level && x.scope_id === c.scope_id && x.key === key
      );
      return d ? [{ level: c.level, direction: d.direction }] : [];
    });
    return {
      key,
      direction: source?.direction ?? null,
      from: source?.from ?? null,
      overridden,
      primary: key === primary?.key,
    };
  });
  resolved.sort((a, b) =>
    Number(b.primary) - Number(a.primary) || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)
  );
  return { chain, primary, keys: resolved };
}

/** The resolution for the runs of experiment `experimentId` (a 404 when there is none). */
export function experimentMetricResolution(ctx: Context, experimentId: string): MetricResolution {
  const e = projectsDb.listExperiments(ctx.db).find((x) => x.id === experimentId);
  if (!e) throw notFound("Experiment", experimentId);
  const project = projectsDb.getProject(ctx.db, e.project);
  return resolveMetricDefinitions(
    {
      project: e.project,
      experiment: e.name,
      experimentPrimary: e.primary_metric,
      projectPrimary: project?.primary_metric ?? null,
    },
    projectsDb.listMetricDefinitions(ctx.db),
    projectsDb.scopeMetricKeys(ctx.db, { project: e.project, experiment: e.name }),
  );
}
