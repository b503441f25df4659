/** Which way is better for metric keys in a run's scope, for the semantic layer. */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { MetricDefinition } from "../../protocol/objects.ts";
import { keyDirection, type RunScope } from "../metrics/primary_metric.ts";

// The one resolution (experiment → project → global, then the name) lives with the primary
// metric's; re-exported so the semantic layer's callers keep one import.
export { keyDirection };

/** The direction of each of `keys` that has one in the scope (keys with none are left out). */
export function keyDirections(
  scope: Pick<RunScope, "project" | "experiment">,
  definitions: readonly MetricDefinition[],
  keys: Iterable<string>,
): Record<string, MetricDirection> {
  const out: Record<string, MetricDirection> = {};
  for (const key of keys) {
    const d = keyDirection(scope, definitions, key);
    if (d) out[key] = d;
  }
  return out;
}
