/**
 * The primary metric of a run: its key and direction resolved experiment → project → global,
 * else a known loss key; which way is better for any key; and the run's primary metric block.
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { MetricDefinition, PrimaryMetric } from "../../protocol/objects.ts";
import type { KeySummary } from "../db/metrics.ts";
import { LOSS_FAMILIES } from "../rules/mod.ts";

const LOWER_IS_BETTER = /loss|error|perplexity|wer|cer/i;
const HIGHER_IS_BETTER = /acc|f1|bleu|auc|score|precision|recall|map/i;

/** Which way is better for a key with no definition, by its name; null when the name says nothing. */
export function defaultDirection(key: string): MetricDirection | null {
  if (LOWER_IS_BETTER.test(key)) return "min";
  if (HIGHER_IS_BETTER.test(key)) return "max";
  return null;
}

// When nothing is defined, a held-out loss says most about a run, then the training loss.
const FALLBACK_KEYS = [...LOSS_FAMILIES.eval, ...LOSS_FAMILIES.train];

/** The scope chain of a run, most specific first. */
export interface RunScope {
  project: string;
  experiment: string | null;
  /** Primary metric names set on the experiment and project records themselves. */
  experimentPrimary?: string | null;
  projectPrimary?: string | null;
}

/**
 * The primary metric key and direction of a run: the definitions resolve experiment →
 * project → global; failing those, a known loss key the run has.
 */
export function resolvePrimaryKey(
  scope: RunScope,
  definitions: readonly MetricDefinition[],
  runKeys: string[],
): { key: string; direction: MetricDirection } | null {
  const p = resolvePrimarySource(scope, definitions, runKeys);
  return p && { key: p.key, direction: p.direction };
}

/**
 * `resolvePrimaryKey()` with where the answer came from: the scope level whose definition (or
 * record) named it, or `default` when no level did and a known key of the run was taken.
 */
export function resolvePrimarySource(
  scope: RunScope,
  definitions: readonly MetricDefinition[],
  runKeys: string[],
):
  | { key: string; direction: MetricDirection; from: MetricDefinition["scope"] | "default" }
  | null {
  const directionOf = (key: string) => keyDirection(scope, definitions, key) ?? "min";
  for (const [s, id] of scopeChain(scope)) {
    const d = definitions.find((x) => x.scope === s && x.scope_id === id && x.primary);
    if (d) return { key: d.key, direction: d.direction, from: s };
    const named = s === "experiment"
      ? scope.experimentPrimary
      : s === "project"
      ? scope.projectPrimary
      : null;
    if (named) return { key: named, direction: directionOf(named), from: s };
  }
  const keys = new Set(runKeys);
  const key = FALLBACK_KEYS.find((k) => keys.has(k)) ??
    runKeys.find((k) => !k.startsWith("sys/") && defaultDirection(k) !== null);
  return key ? { key, direction: directionOf(key), from: "default" } : null;
}

/**
 * Which way is better for `key` in a run's scope: the metric definitions resolve experiment →
 * project → global, then the name decides (`loss` → min, `acc` → max); null when neither says.
 */
export function keyDirection(
  scope: Pick<RunScope, "project" | "experiment">,
  definitions: readonly MetricDefinition[],
  key: string,
): MetricDirection | null {
  return keyDirectionSource(scope, definitions, key)?.direction ?? null;
}

/** `keyDirection()` with where it came from: the level of the definition, or the key's name. */
export function keyDirectionSource(
  scope: Pick<RunScope, "project" | "experiment">,
  definitions: readonly MetricDefinition[],
  key: string,
): { direction: MetricDirection; from: MetricDefinition["scope"] | "name" } | null {
  for (const [s, id] of scopeChain(scope)) {
    const d = definitions.find((x) => x.scope === s && x.scope_id === id && x.key === key);
    if (d) return { direction: d.direction, from: s };
  }
  const byName = defaultDirection(key);
  return byName && { direction: byName, from: "name" };
}

/** The metric-definition scopes of a run, most specific first: experiment, project, global. */
export function scopeChain(
  scope: Pick<RunScope, "project" | "experiment">,
): [MetricDefinition["scope"], string][] {
  const out: [MetricDefinition["scope"], string][] = [];
  if (scope.experiment) out.push(["experiment", `${scope.project}/${scope.experiment}`]);
  out.push(["project", scope.project], ["global", ""]);
  return out;
}

/** The primary metric block of a run object from its key's summary. */
export function primaryMetricOf(
  resolved: { key: string; direction: MetricDirection } | null,
  summary: KeySummary | null,
): PrimaryMetric | null {
  if (!resolved) return null;
  if (!summary) return { ...resolved, latest: null, best: null, best_step: null };
  const min = resolved.direction === "min";
  return {
    ...resolved,
    latest: Number.isFinite(summary.last_value) ? summary.last_value : null,
    best: min ? summary.min_value : summary.max_value,
    best_step: min ? summary.min_step : summary.max_step,
  };
}
