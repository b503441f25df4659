import type { MetricDefinition } from "../../protocol/objects.ts";
import { defaultDirection, type RunScope } from "../metrics/primary_metric.ts";

/**
 * Which way is better for `key` in a run's scope: the metric definitions resolve experiment →
 * project → global, then the name decides (`loss` → min, `acc` → max); null when neither says.
 */
export function keyDirection(
  scope: Pick<RunScope, "project" | "experiment">,
  definitions: readonly MetricDefinition[],
  key: string,
): "min" | "max" | null {
  const chain: [MetricDefinition["scope"], string][] = [
    ["project", scope.project],
    ["global", ""],
  ];
  if (scope.experiment) chain.unshift(["experiment", `${scope.project}/${scope.experiment}`]);
  for (const [s, id] of chain) {
    const d = definitions.find((x) => x.scope === s && x.scope_id === id && x.key === key);
    if (d) return d.direction;
  }
  return defaultDirection(key);
}

/** The direction of each of `keys` that has one in the scope (keys with none are left out). */
export function keyDirections(
  scope: Pick<RunScope, "project" | "experiment">,
  definitions: readonly MetricDefinition[],
  keys: Iterable<string>,
): Record<string, "min" | "max"> {
  const out: Record<string, "min" | "max"> = {};
  for (const key of keys) {
    const d = keyDirection(scope, definitions, key);
    if (d) out[key] = d;
  }
  return out;
}
