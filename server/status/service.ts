/**
 * The status overview: the answer to "can I submit another job now, and does anything need
 * me?" that the Dashboard, `gpuctl status` and the `get_status` tool all show.
 */
import type { EventRecord, NodeRecord } from "../../protocol/objects.ts";
import type { IngestStatus } from "../gateway/ingest_queue.ts";
import { events as eventsDb, jobs as jobsDb, nodes as nodesDb, runs as runsDb } from "../db/mod.ts";
import type { Context } from "../context.ts";
import { compareJobs } from "../scheduler/mod.ts";
import { budgetOf } from "../budgets/service.ts";
import type { BudgetStatus } from "../../protocol/budgets.ts";
import { estimateStarts, expectedEnd, type HeldSlots } from "./estimate_starts.ts";

/** How far back warning and critical events count as alerts. */
export const ALERT_WINDOW_H = 24;
/** Queued jobs the overview lists. */
export const QUEUE_PREVIEW = 5;
/** Recent alerts the overview lists. */
export const RECENT_ALERTS = 5;

/** A queued job as the overview shows it, with its forecast start. */
export interface QueuedJobPreview {
  job_id: string;
  name: string;
  gpus: number;
  priority: number;
  node: string | null;
  /** Why it waits, as the scheduler last said. */
  reason: string | null;
  /** When it may start (a forecast from the progress of running jobs); null: unknown. */
  estimated_start_at: string | null;
  /** Where the forecast places it. */
  estimated_node: string | null;
  created_at: string;
}

/** `GET /api/status`. */
export interface StatusOverview {
  nodes: { online: number; offline: number; total: number };
  /** GPUs of online nodes, and how many of those an attempt holds. */
  gpus: { busy: number; total: number };
  jobs: { queued: number; dispatched: number; running: number };
  /** Warning and critical events of the last `window_h` hours. */
  alerts: { window_h: number; warning: number; critical: number; recent: EventRecord[] };
  /** The first queued jobs in queue order. */
  queue: QueuedJobPreview[];
  /**
   * How far behind storing agents' data the server is (null where no agent gateway runs):
   * while `behind_s` is high, agents hold frames back in their spools and the charts lag.
   */
  ingest: IngestStatus | null;
  /**
   * The asking token's budget: each limit, what its jobs use and what is left (null: no
   * budget). Absent where no token asked (the Dashboard).
   */
  budget?: BudgetStatus | null;
  generated_at: string;
}

/** The status overview, from the store; with `tokenId`, that token's budget too. */
export function getStatus(ctx: Context, tokenId?: string): StatusOverview {
  const now = ctx.now();
  const nodes = nodesDb.listNodes(ctx.db);
  const online = nodes.filter((n) => n.status === "ONLINE");
  const onlineIds = new Set(online.map((n) => n.id));
  const active = jobsDb.jobsInStatus(ctx.db, ["QUEUED", "DISPATCHED", "RUNNING"]);
  const holding = active.filter((j) => j.status !== "QUEUED" && j.node_id !== null);
  const queued = active.filter((j) => j.status === "QUEUED").sort((a, b) =>
    compareJobs(
      { id: a.id, priority: a.priority, submit_seq: a.seq, gpus: a.gpus, node: a.node },
      { id: b.id, priority: b.priority, submit_seq: b.seq, gpus: b.gpus, node: b.node },
    )
  );

  const held: HeldSlots[] = holding.map((j) => {
    const run = j.run_id ? runsDb.getRun(ctx.db, j.run_id) : null;
    return {
      node_id: j.node_id!,
      gpus: j.gpu_indices.length,
      ends_at: run ? expectedEnd(run, now.getTime()) : null,
    };
  });
  const preview = queued.slice(0, QUEUE_PREVIEW);
  const forecast = estimateStarts(
    preview.map((j) => ({ id: j.id, gpus: j.gpus, node: j.node })),
    online.map((n: NodeRecord) => ({ id: n.id, gpus: n.gpus.length, cpu_slots: n.cpu_slots })),
    held,
    now.getTime(),
  );

  const since = new Date(now.getTime() - ALERT_WINDOW_H * 3600_000).toISOString();
  const counts = eventsDb.countSince(ctx.db, since, ["warning", "critical"]);
  const recent = eventsDb.listEvents(ctx.db, { severity: "warning" }, RECENT_ALERTS).items
    .filter((e) => e.ts >= since);

  return {
    nodes: { online: online.length, offline: nodes.length - online.length, total: nodes.length },
    gpus: {
      busy: holding.filter((j) => onlineIds.has(j.node_id!)).reduce(
        (n, j) => n + j.gpu_indices.length,
        0,
      ),
      total: online.reduce((n, node) => n + node.gpus.length, 0),
    },
    jobs: {
      queued: queued.length,
      dispatched: active.filter((j) => j.status === "DISPATCHED").length,
      running: active.filter((j) => j.status === "RUNNING").length,
    },
    alerts: {
      window_h: ALERT_WINDOW_H,
      warning: counts.warning ?? 0,
      critical: counts.critical ?? 0,
      recent,
    },
    queue: preview.map((j, i) => ({
      job_id: j.id,
      name: j.name,
      gpus: j.gpus,
      priority: j.priority,
      node: j.node,
      reason: j.reason ?? null,
      estimated_start_at: forecast[i].starts_at === null
        ? null
        : new Date(forecast[i].starts_at!).toISOString(),
      estimated_node: forecast[i].node_id,
      created_at: j.created_at,
    })),
    ingest: ctx.agents?.ingestStatus?.() ?? null,
    ...(tokenId === undefined ? {} : { budget: budgetOf(ctx, tokenId) }),
    generated_at: now.toISOString(),
  };
}
