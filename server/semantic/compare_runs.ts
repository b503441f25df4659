/**
 * `compareRuns`: runs side by side on one metric — best, latest, rank, steps, duration — and
 * the config keys that differ; says so when their primary metrics disagree.
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { ComparedRun, NextAction, Run, RunComparison } from "../../protocol/objects.ts";
import type { KeySummary } from "../db/metrics.ts";
import { act, better, fmt, jsonMetric, secondsBetween } from "./_format.ts";
import { configDiff } from "./config_diff.ts";

/** The runs `compareRuns` looks at, loaded by the caller. */
export interface CompareRunsInput {
  /** Each run with its primary metric resolved, and the summaries of its keys. */
  runs: { run: Run; keys: KeySummary[] }[];
  /** The key asked for; each run's primary metric when absent. */
  metric?: string;
  /**
   * Directions of the keys that have one in the first run's scope (metric definitions, then
   * the name); a key missing here is assumed "min", and the summary says so.
   */
  directions: Readonly<Record<string, MetricDirection>>;
  now: Date;
}

const userKeys = (keys: KeySummary[]) => keys.filter((k) => !k.key.startsWith("sys/"));

/**
 * Runs side by side on one metric: best (and its step) and latest value, a ranking by best,
 * which config keys differ, duration and steps. Without `metric`, the runs' primary metrics
 * must agree; when they do not, the answer says so and names keys they all have.
 */
export function compareRuns(input: CompareRunsInput): RunComparison {
  const ids = input.runs.map((r) => r.run.id);
  const common = commonKeys(input.runs.map((r) => r.keys));
  const { diff, identical } = configDiff(
    input.runs.map((r) => ({ run_id: r.run.id, config: r.run.config })),
  );
  const chosen = chooseMetric(input, common);
  const compared = input.runs.map((r) => comparedRun(r, chosen.metric, input.now));
  const ranking = chosen.metric ? rank(compared, chosen.metric.direction) : [];
  const metric = chosen.metric;
  const missing = metric ? compared.filter((c) => c.best === null).map((c) => c.run_id) : [];
  const comparable = metric !== null && ranking.length > 0;
  const reason = chosen.reason ??
    (metric && ranking.length === 0
      ? `No run has a finite value of "${metric.key}"; keys every run has: ${
        common.join(", ") || "none"
      }`
      : null);
  return {
    metric,
    comparable,
    reason,
    common_keys: common,
    runs: compared,
    ranking,
    config_diff: diff,
    identical_config_keys: identical,
    summary: summaryOf(compared, ranking, metric, reason, missing, diff, chosen.assumed),
    next_actions: nextActions(ids, ranking, common, input, comparable),
  };
}

function commonKeys(keySets: KeySummary[][]): string[] {
  const [first, ...rest] = keySets.map((ks) => new Set(userKeys(ks).map((k) => k.key)));
  return [...(first ?? [])].filter((k) => rest.every((s) => s.has(k))).sort();
}

function chooseMetric(input: CompareRunsInput, common: string[]): {
  metric: { key: string; direction: MetricDirection } | null;
  reason: string | null;
  assumed: boolean;
} {
  if (input.metric) {
    const direction = input.directions[input.metric];
    return {
      metric: { key: input.metric, direction: direction ?? "min" },
      reason: null,
      assumed: !direction,
    };
  }
  const primaries = input.runs.map((r) => r.run.primary_metric);
  const keys = new Set(primaries.map((p) => p?.key ?? null));
  if (keys.size === 1 && primaries[0]) {
    return {
      metric: { key: primaries[0].key, direction: primaries[0].direction },
      reason: null,
      assumed: false,
    };
  }
  const each = input.runs.map((r) =>
    `${r.run.id} → ${r.run.primary_metric ? `"${r.run.primary_metric.key}"` : "none"}`
  ).join(", ");
  return {
    metric: null,
    reason: `The runs' primary metrics differ (${each}), so they are not comparable as they ` +
      `are; pass metric= one of the keys every run has: ${common.join(", ") || "none"}`,
    assumed: false,
  };
}

function comparedRun(
  r: { run: Run; keys: KeySummary[] },
  metric: { key: string; direction: MetricDirection } | null,
  now: Date,
): ComparedRun {
  const s = metric ? r.keys.find((k) => k.key === metric.key) ?? null : null;
  const min = metric?.direction === "min";
  return {
    run_id: r.run.id,
    name: r.run.name,
    status: r.run.status,
    project: r.run.project,
    experiment: r.run.experiment,
    metric_key: metric?.key ?? r.run.primary_metric?.key ?? null,
    best: s ? (min ? s.min_value : s.max_value) : null,
    best_step: s ? (min ? s.min_step : s.max_step) : null,
    latest: s ? jsonMetric(s.last_value) : null,
    latest_step: s ? s.last_step : null,
    steps: r.run.step,
    duration_s: secondsBetween(
      r.run.started_at ?? r.run.created_at,
      r.run.finished_at,
      now.getTime(),
    ),
    rank: null,
  };
}

/** Ranks runs with a best value in place (1 = best); returns their ids, best first. */
function rank(runs: ComparedRun[], direction: MetricDirection): string[] {
  const ranked = runs.filter((r) => r.best !== null)
    .sort((a, b) => direction === "min" ? a.best! - b.best! : b.best! - a.best!);
  ranked.forEach((r, i) => r.rank = i + 1);
  return ranked.map((r) => r.run_id);
}

function summaryOf(
  runs: ComparedRun[],
  ranking: string[],
  metric: { key: string; direction: MetricDirection } | null,
  reason: string | null,
  missing: string[],
  diff: { key: string }[],
  assumed: boolean,
): string {
  const parts: string[] = [];
  if (metric && ranking.length) {
    const byId = new Map(runs.map((r) => [r.run_id, r]));
    const order = ranking.map((id) => {
      const r = byId.get(id)!;
      return `${id} "${r.name}" ${fmt(r.best)}${
        r.best_step === null ? "" : ` at step ${r.best_step}`
      }`;
    });
    parts.push(
      `Ranked ${ranking.length} run${ranking.length === 1 ? "" : "s"} by best "${metric.key}" ` +
        `(${better(metric.direction)}${
          assumed ? ", assumed: no metric definition or telling name" : ""
        }): ${order.join(", then ")}.`,
    );
  }
  if (reason) parts.push(reason + ".");
  if (missing.length && ranking.length) {
    parts.push(`No value of "${metric!.key}" in: ${missing.join(", ")}.`);
  }
  parts.push(
    diff.length
      ? `Configs differ in ${diff.length} key${diff.length === 1 ? "" : "s"}: ${
        diff.slice(0, 10).map((d) => d.key).join(", ")
      }${diff.length > 10 ? ", …" : ""}.`
      : "Configs are identical.",
  );
  return parts.join(" ");
}

function nextActions(
  ids: string[],
  ranking: string[],
  common: string[],
  input: CompareRunsInput,
  comparable: boolean,
): NextAction[] {
  if (!comparable) {
    const key = common.find((k) => input.directions[k]) ?? common[0];
    return key
      ? [act(
        "compare_runs",
        { runs: ids, metric: key },
        `Compare on "${key}", a key every run has`,
      )]
      : ids.map((id) => act("diagnose_run", { run_id: id }, "See what this run recorded"));
  }
  const top = ranking[0];
  return [
    act("get_best_checkpoint", { run_id: top }, `Pick the checkpoint of the best run ${top}`),
    act("compare_checkpoints", { run_id: top }, `See the checkpoints of ${top} ranked`),
    act("diagnose_run", { run_id: top }, `Check the health of the best run ${top}`),
  ];
}
