/**
 * `query_runs`: runs filtered by what they record — config values, metrics (best or latest),
 * status, parent, mark, time — in a small JSON language, never SQL. Shared by the REST API,
 * the MCP tool and `gpuctl run list --where`.
 *
 * @module
 */
import { z } from "zod";
import { MAX_NAME_LENGTH } from "./rest/fields.ts";
import { RUN_MARKS, RUN_STATUSES } from "./vocabulary.ts";
import type { Run } from "./objects.ts";

/** Runs one query looks at, newest first, before its config and metric conditions. */
export const MAX_SCANNED_RUNS = 10_000;
/** The most runs one answer holds. */
export const MAX_QUERY_LIMIT = 500;

const scalar = z.union([z.string().max(1000), z.number(), z.boolean(), z.null()]);
const comparison = z.strictObject({
  eq: scalar.optional(),
  ne: scalar.optional(),
  lt: z.number().optional(),
  lte: z.number().optional(),
  gt: z.number().optional(),
  gte: z.number().optional(),
  in: z.array(scalar).max(100).optional(),
}).refine((c) => Object.keys(c).length > 0, "name at least one of eq, ne, lt, lte, gt, gte, in");
export type Comparison = z.infer<typeof comparison>;
/** A value (equal to it) or a comparison. */
const condition = z.union([scalar, comparison]);
export type Condition = z.infer<typeof condition>;

const configKey = z.string().min(1).max(MAX_NAME_LENGTH);
const iso = z.iso.datetime({ offset: true, message: "must be an ISO 8601 time" });

/** The fields `order_by` may name. */
export const ORDER_FIELD =
  /^-?(created_at|finished_at|step|name|config\.[^\s]{1,200}|metric\.[^\s]{1,200}\.(best|latest))$/;

/** `POST /api/runs:query`. */
export const runQuery = z.strictObject({
  where: z.strictObject({
    project: z.string().max(MAX_NAME_LENGTH).optional().describe("Only runs of this project"),
    experiment: z.string().max(MAX_NAME_LENGTH).optional().describe("Only runs of this experiment"),
    status: z.union([z.enum(RUN_STATUSES), z.array(z.enum(RUN_STATUSES)).min(1).max(7)])
      .optional().describe('A status or a list, e.g. ["SUCCEEDED", "RUNNING"]'),
    parent_run: z.string().max(64).nullable().optional().describe(
      "Only children of this run (null: only roots)",
    ),
    mark: z.enum([...RUN_MARKS, "none"]).optional().describe(
      'Only kept, discarded or unmarked ("none") runs',
    ),
    created_after: iso.optional().describe("Created at or after this time"),
    created_before: iso.optional().describe("Created before this time"),
    config: z.record(configKey, condition).optional().describe(
      'Config conditions: {"lr": 0.001} (equal), {"lr": {"lt": 0.01}}, {"model.depth": ' +
        '{"in": [6, 12]}}; a dotted key also reaches into nested config',
    ),
    metrics: z.record(
      configKey,
      z.strictObject({ best: comparison.optional(), latest: comparison.optional() }),
    ).optional().describe(
      "Metric conditions on the best (by the key's direction) or latest value: " +
        '{"eval/loss": {"best": {"lt": 0.3}}}',
    ),
  }).optional().describe("What the runs must match (all of it)"),
  order_by: z.string().regex(
    ORDER_FIELD,
    "must be created_at, finished_at, step, name, config.<key> or metric.<key>.best|latest, " +
      'with "-" in front for descending',
  ).optional().describe(
    'Sort: "-created_at" (default), "metric.eval/loss.best", "-config.lr" ("-": descending); ' +
      "runs without the value come last",
  ),
  limit: z.number().int().min(1).max(MAX_QUERY_LIMIT).optional().describe(
    `Runs to return (default 50, at most ${MAX_QUERY_LIMIT})`,
  ),
}).superRefine((q, ctx) => {
  const n = Object.keys(q.where?.config ?? {}).length + Object.keys(q.where?.metrics ?? {}).length;
  if (n > 20) {
    ctx.addIssue({ code: "custom", path: ["where"], message: "names more than 20 conditions" });
  }
});
export type RunQuery = z.infer<typeof runQuery>;

/** The answer: the matching runs in order, with how many matched and were looked at. */
export interface RunQueryResult {
  items: Run[];
  /** Runs that matched (before `limit`). */
  matched: number;
  /** Runs looked at; when `truncated`, older runs were not (narrow by project or time). */
  scanned: number;
  truncated: boolean;
}
