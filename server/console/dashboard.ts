/**
 * What the dashboard shows, in one read: the status overview, the active runs with their
 * primary metric's recent values, and the fleet with the jobs that hold its GPUs.
 */
import type { ActiveRun } from "../../islands/ActiveRuns.tsx";
import type { FleetNode, Holder } from "../../islands/Fleet.tsx";
import type { Job, Run } from "../../protocol/objects.ts";
import { metricsQuery } from "../../protocol/rest/metrics.ts";
import type { Context } from "../context.ts";
import { listJobs } from "../jobs/service.ts";
import { queryMetrics } from "../metrics/service.ts";
import { listNodes } from "../nodes/service.ts";
import { listRuns } from "../runs/service.ts";
import { getStatus, type StatusOverview } from "../status/service.ts";

/** Active runs the dashboard lists. */
export const ACTIVE_RUNS = 20;
/** Points of each sparkline. */
export const SPARK_POINTS = 60;

export interface Dashboard {
  status: StatusOverview;
  runs: ActiveRun[];
  series: Record<string, (number | null)[]>;
  nodes: FleetNode[];
  holders: Holder[];
}

/** A run as the dashboard's list needs it. */
export const activeRunOf = (r: Run): ActiveRun => ({
  id: r.id,
  name: r.name,
  project: r.project,
  experiment: r.experiment,
  step: r.step,
  max_steps: r.max_steps,
  node_id: r.node_id,
  primary_metric: r.primary_metric,
});

/** A job as a GPU's holder. */
export const holderOf = (j: Job): Holder => ({
  id: j.id,
  name: j.name,
  node_id: j.node_id,
  gpu_indices: j.gpu_indices,
  run_id: j.run_id,
});

export async function loadDashboard(ctx: Context): Promise<Dashboard> {
  const status = getStatus(ctx);
  const runs = listRuns(ctx, { status: "RUNNING", limit: ACTIVE_RUNS }).items;
  const keys = [...new Set(runs.flatMap((r) => r.primary_metric ? [r.primary_metric.key] : []))];
  const series: Record<string, (number | null)[]> = {};
  if (runs.length && keys.length) {
    const answer = await queryMetrics(
      ctx,
      metricsQuery.parse({ runs: runs.map((r) => r.id), keys, max_points: SPARK_POINTS }),
    );
    for (const s of answer.series) {
      const run = runs.find((r) => r.id === s.run_id);
      if (run?.primary_metric?.key !== s.key) continue;
      series[s.run_id] = s.values.map((v) =>
        typeof v === "number" && Number.isFinite(v) ? v : null
      );
    }
  }
  return {
    status,
    runs: runs.map(activeRunOf),
    series,
    nodes: listNodes(ctx).items,
    holders: listJobs(ctx, { status: "RUNNING", limit: 200 }).items.map(holderOf),
  };
}
