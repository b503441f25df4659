/**
 * What the project routes accept: projects, experiments, the experiment list's filter, metric
 * definitions and the primary metric.
 */
import { z } from "zod";
import { DEFINITION_SCOPES, METRIC_DIRECTIONS } from "../vocabulary.ts";
import { MAX_NAME_LENGTH, name, text } from "./fields.ts";

export const projectCreate = z.strictObject({
  name,
  description: text.optional(),
  primary_metric: name.optional(),
  eval_command: text.optional(),
});
export type ProjectCreate = z.infer<typeof projectCreate>;

export const experimentCreate = z.strictObject({
  project: name,
  name,
  description: text.optional(),
  primary_metric: name.optional(),
});
export type ExperimentCreate = z.infer<typeof experimentCreate>;

/** `GET /api/experiments`: optionally one project's. */
export const experimentsQuery = z.object({
  project: z.string().max(200).optional().describe("Only this project's experiments"),
});
export type ExperimentsQuery = z.infer<typeof experimentsQuery>;

/** Where a metric definition applies: every run, one project's, or one experiment's. */
const metricScope = z.enum(DEFINITION_SCOPES);
/** The project's name, or "<project>/<experiment>". */
const metricScopeId = z.string().max(2 * MAX_NAME_LENGTH + 1);

export const metricDefinition = z.strictObject({
  scope: metricScope,
  scope_id: metricScopeId.optional(),
  key: name,
  direction: z.enum(METRIC_DIRECTIONS),
  primary: z.boolean().optional(),
});
export type MetricDefinitionIn = z.infer<typeof metricDefinition>;

export const metricDefinitionsPut = z.strictObject({
  definitions: z.array(metricDefinition).min(1).max(1000),
});

/**
 * `PUT /api/metric-definitions/primary`: makes `key` the primary metric of a scope. Without
 * `direction`, the key's direction in that scope (its definitions, then its name) is kept.
 */
export const primaryMetricSet = z.strictObject({
  scope: metricScope.describe(
    "Where the primary metric applies: every run, one project's, or one experiment's",
  ),
  scope_id: metricScopeId.optional().describe(
    'The project\'s name, or "<project>/<experiment>" (not for global)',
  ),
  key: name.describe('The metric key, e.g. "eval/accuracy"'),
  direction: z.enum(METRIC_DIRECTIONS).optional().describe(
    "Which way is better (default: the key's known direction, else its name)",
  ),
});
export type PrimaryMetricSet = z.infer<typeof primaryMetricSet>;
