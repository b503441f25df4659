/**
 * `query_runs`: the runs a JSON filter selects. Status, project, parent, mark and time narrow
 * the runs in SQL (newest first, at most MAX_SCANNED_RUNS); config and metric conditions and
 * the order are then decided here over plain data (`matches`, `compareRuns` are pure).
 *
 * @module
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { KeySummary } from "../db/metrics.ts";
import { metrics as metricsDb, projects as projectsDb, runs as runsDb } from "../db/mod.ts";
import type { StoredRun } from "../db/runs.ts";
import type { Context } from "../context.ts";
import { keyDirection } from "../metrics/primary_metric.ts";
import {
  type Comparison,
  type Condition,
  MAX_SCANNED_RUNS,
  type RunQuery,
  type RunQueryResult,
} from "../../protocol/run_query.ts";
import { withPrimaryMetric } from "./service.ts";

/** The default number of runs an answer holds. */
export const DEFAULT_QUERY_LIMIT = 50;

/** A config value by key: the key as written, else a dotted path into nested objects. */
export function configValue(config: Record<string, unknown>, key: string): unknown {
  if (Object.hasOwn(config, key)) return config[key];
  let at: unknown = config;
  for (const part of key.split(".")) {
    if (at === null || typeof at !== "object" || !Object.hasOwn(at, part)) return undefined;
    at = (at as Record<string, unknown>)[part];
  }
  return at;
}

/** Whether `value` meets a condition (a plain value means equal). Missing values never do. */
export function meets(value: unknown, c: Condition): boolean {
  if (value === undefined) return false;
  if (c === null || typeof c !== "object") return value === c;
  const cmp = c as Comparison;
  const n = typeof value === "number" ? value : NaN;
  if ("eq" in cmp && value !== cmp.eq) return false;
  if ("ne" in cmp && value === cmp.ne) return false;
  if (cmp.in && !cmp.in.includes(value as never)) return false;
  if (cmp.lt !== undefined && !(n < cmp.lt)) return false;
  if (cmp.lte !== undefined && !(n <= cmp.lte)) return false;
  if (cmp.gt !== undefined && !(n > cmp.gt)) return false;
  if (cmp.gte !== undefined && !(n >= cmp.gte)) return false;
  return true;
}

/** A run with what its conditions and order read. */
interface Candidate {
  run: StoredRun;
  /** key → {best, latest} (numbers; NaN and ±Infinity are not comparable). */
  metrics: Map<string, { best: number | null; latest: number | null }>;
}

function metricValues(
  run: StoredRun,
  keys: KeySummary[],
  direction: (run: StoredRun, key: string) => MetricDirection | null,
): Candidate["metrics"] {
  const out: Candidate["metrics"] = new Map();
  for (const k of keys) {
    const d = direction(run, k.key);
    const latest = typeof k.last_value === "number" && Number.isFinite(k.last_value)
      ? k.last_value
      : null;
    out.set(k.key, { best: d === "min" ? k.min_value : d === "max" ? k.max_value : null, latest });
  }
  return out;
}

/** The sort value of a run for an `order_by` field (undefined: the run lacks it). */
function sortValue(c: Candidate, field: string): string | number | undefined {
  if (field === "created_at") return c.run.created_at;
  if (field === "finished_at") return c.run.finished_at ?? undefined;
  if (field === "step") return c.run.step ?? undefined;
  if (field === "name") return c.run.name;
  if (field.startsWith("config.")) {
    const v = configValue(c.run.config, field.slice(7));
    return typeof v === "number" || typeof v === "string" ? v : undefined;
  }
  const m = /^metric\.(.+)\.(best|latest)$/.exec(field)!;
  return c.metrics.get(m[1])?.[m[2] as "best" | "latest"] ?? undefined;
}

/** `POST /api/runs:query`. */
export function queryRuns(ctx: Context, q: RunQuery): RunQueryResult {
  const w = q.where ?? {};
  const scanned = runsDb.selectRuns(ctx.db, {
    project: w.project,
    experiment: w.experiment,
    statuses: w.status === undefined ? undefined : [w.status].flat(),
    parent_run: w.parent_run,
    mark: w.mark,
    created_after: w.created_after,
    created_before: w.created_before,
  }, MAX_SCANNED_RUNS + 1);
  const truncated = scanned.length > MAX_SCANNED_RUNS;
  const runs = scanned.slice(0, MAX_SCANNED_RUNS);
  const order = q.order_by ?? "-created_at";
  const field = order.replace(/^-/, "");
  const needsMetrics = Object.keys(w.metrics ?? {}).length > 0 || field.startsWith("metric.");
  const definitions = needsMetrics ? projectsDb.listMetricDefinitions(ctx.db) : [];
  const direction = (run: StoredRun, key: string) => keyDirection(run, definitions, key);
  const matched: Candidate[] = [];
  for (const run of runs) {
    if (!Object.entries(w.config ?? {}).every(([k, c]) => meets(configValue(run.config, k), c))) {
      continue;
    }
    const metrics = needsMetrics
      ? metricValues(run, metricsDb.listKeySummaries(ctx.db, run.id), direction)
      : new Map();
    const ok = Object.entries(w.metrics ?? {}).every(([key, cond]) => {
      const v = metrics.get(key);
      return (!cond.best || meets(v?.best ?? undefined, cond.best)) &&
        (!cond.latest || meets(v?.latest ?? undefined, cond.latest));
    });
    if (ok) matched.push({ run, metrics });
  }
  const sign = order.startsWith("-") ? -1 : 1;
  const sorted = matched.map((c, i) => ({ c, i, v: sortValue(c, field) })).sort((a, b) => {
    // Runs without the value come last, whichever the direction; ties keep newest first.
    if (a.v === undefined || b.v === undefined) {
      return a.v === b.v ? a.i - b.i : a.v === undefined ? 1 : -1;
    }
    return (a.v < b.v ? -1 : a.v > b.v ? 1 : 0) * sign || a.i - b.i;
  });
  const limit = q.limit ?? DEFAULT_QUERY_LIMIT;
  return {
    items: sorted.slice(0, limit).map(({ c }) => withPrimaryMetric(ctx, c.run)),
    matched: matched.length,
    scanned: runs.length,
    truncated,
  };
}
