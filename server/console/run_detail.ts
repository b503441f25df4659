/**
 * What the run detail page shows for each tab, in one read: the run, its job, and the facts
 * of the tab (a live overview, a diagnosis, the failure explanation, series, checkpoints with
 * the recommendation, evaluations, events).
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { Note } from "../../protocol/lineage.ts";
import type { Provenance } from "../../protocol/provenance.ts";
import { getRunCode, runNotes } from "../lineage/service.ts";
import type {
  CheckpointRecommendation,
  CheckpointWithEvaluations,
  EventRecord,
  FailureExplanation,
  Job,
  LogLine,
  Run,
  RunDiagnosis,
} from "../../protocol/objects.ts";
import type { Context } from "../context.ts";
import { lastEventId, listEvents } from "../events/service.ts";
import { getJob } from "../jobs/service.ts";
import { getRunMetrics, type MetricKey } from "../metrics/service.ts";
import type { Series } from "../metrics/query.ts";
import { keyDirection } from "../metrics/primary_metric.ts";
import { getMetricDefinitions, listProjects } from "../projects/service.ts";
import { getLogs, getRun, listCheckpoints, listMetricKeys } from "../runs/service.ts";
import { diagnoseRunById, explainRunFailure, recommendCheckpoint } from "../semantic/mod.ts";
import { NotFoundError } from "../errors.ts";

export const RUN_TABS = [
  "overview",
  "metrics",
  "checkpoints",
  "evaluations",
  "events",
  "code",
] as const;
export type RunTab = typeof RUN_TABS[number];

/** Points each chart is drawn from (the server downsamples with LTTB). */
export const CHART_POINTS = 1000;
/** Charts the Metrics tab draws at most. */
export const MAX_CHARTS = 48;
/** Log lines the overview's tail starts with. */
export const LOG_TAIL = 300;

export interface ChartSeries {
  key: string;
  /** The series as `metrics:query` answers it, for the chart panel's first paint. */
  series: Series;
  direction: MetricDirection | null;
}

export interface RunDetail {
  run: Run;
  job: Job | null;
  tab: RunTab;
  live: boolean;
  failed: boolean;
  keys: (MetricKey & { direction: MetricDirection | null })[];
  checkpoints: CheckpointWithEvaluations[];
  diagnosis?: RunDiagnosis;
  failure?: FailureExplanation;
  charts?: ChartSeries[];
  logs?: LogLine[];
  events?: EventRecord[];
  recommendation?: CheckpointRecommendation;
  /** The project's evaluation command (null: an evaluation must name one). */
  evalCommand: string | null;
  /** The newest event id at the time of the read, for live lists to resume after. */
  lastEventId: number;
  /** The run's notes, oldest first. */
  notes: Note[];
  /** The Code tab: the code the run ran (null: no snapshot). */
  code?: Provenance | null;
}

const LIVE = new Set(["RUNNING", "QUEUED"]);
const FAILED = new Set(["FAILED", "LOST"]);

async function charts(ctx: Context, run: Run, keys: RunDetail["keys"]): Promise<ChartSeries[]> {
  if (!keys.length) return [];
  const answer = await getRunMetrics(ctx, run.id, {
    keys: keys.map((k) => k.key),
    max_points: CHART_POINTS,
  });
  const series = "series" in answer ? answer.series : [];
  return keys.flatMap((k) => {
    const s = series.find((x) => x.key === k.key);
    if (!s) return [];
    return [{ key: k.key, series: s, direction: k.direction }];
  });
}

export async function loadRunDetail(ctx: Context, id: string, tab: RunTab): Promise<RunDetail> {
  const run = getRun(ctx, id);
  let job: Job | null = null;
  if (run.job_id) {
    try {
      job = getJob(ctx, run.job_id);
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
  }
  const definitions = getMetricDefinitions(ctx).items;
  const keys = listMetricKeys(ctx, id).keys.map((k) => ({
    ...k,
    direction: keyDirection(run, definitions, k.key),
  }));
  const d: RunDetail = {
    run,
    job,
    tab,
    live: LIVE.has(run.status),
    failed: FAILED.has(run.status),
    keys,
    checkpoints: listCheckpoints(ctx, id).items,
    lastEventId: lastEventId(ctx),
    notes: runNotes(ctx, id),
    evalCommand: listProjects(ctx).items.find((p) => p.name === run.project)?.eval_command ??
      null,
  };
  // The retry button's warning needs the diagnosis on every tab.
  if (d.failed) d.failure = explainRunFailure(ctx, id);
  switch (tab) {
    case "overview": {
      d.diagnosis = diagnoseRunById(ctx, id);
      const primary = keys.filter((k) => k.key === run.primary_metric?.key);
      d.charts = await charts(ctx, run, primary);
      d.logs = getLogs(ctx, id, { limit: d.live ? LOG_TAIL : 60 }).lines;
      d.events = listEvents(ctx, { run_id: id, limit: 10 }).items;
      break;
    }
    case "metrics": {
      const own = keys.filter((k) => !k.key.startsWith("sys/"));
      const sys = keys.filter((k) => k.key.startsWith("sys/"));
      d.charts = await charts(ctx, run, [...own, ...sys].slice(0, MAX_CHARTS));
      break;
    }
    case "checkpoints":
      d.recommendation = recommendCheckpoint(ctx, { run: id });
      break;
    case "events":
      d.events = listEvents(ctx, { run_id: id, limit: 200 }).items;
      break;
    case "evaluations":
      break;
    case "code":
      d.code = getRunCode(ctx, id);
      break;
  }
  return d;
}
