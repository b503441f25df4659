/**
 * GPU hosts: what the API lists, and what happens to the store when an agent says hello,
 * sends a heartbeat or falls silent. The agent gateway (`server/gateway/`) owns the sockets
 * and the clocks; it calls these for every change of a node's record.
 */
import type {
  HeartbeatFrame,
  HelloFrame,
  OwnedProcess,
  ServerFrame,
} from "../../protocol/agent.ts";
import type { NodeRecord, Page } from "../../protocol/objects.ts";
import { jobs as jobsDb, nodes as nodesDb, runs as runsDb } from "../db/mod.ts";
import type { JobState } from "../db/jobs.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import { notFound } from "../errors.ts";
import { emitEvent } from "../events/emit.ts";
import {
  clockTime,
  DEFAULT_GRACE_S,
  endAttempt,
  type LeaseHold,
  reattachLostAttempt,
} from "../jobs/transitions.ts";

/** `GET /api/nodes`: every node the server has heard of, by id. */
export function listNodes(ctx: Context): Page<NodeRecord> {
  return { items: nodesDb.listNodes(ctx.db), next_cursor: null };
}

/** `GET /api/nodes/{id}`. */
export function getNode(ctx: Context, id: string): NodeRecord {
  const node = nodesDb.getNode(ctx.db, id);
  if (!node) throw notFound("Node", id);
  return node;
}

/** What the server sends an agent to stop an attempt. */
export type CancelFrame = Extract<ServerFrame, { type: "cancel" }>;

const LIVE: JobState["status"][] = ["DISPATCHED", "RUNNING"];

/**
 * Stores what an agent said in its hello, in one transaction: the node ONLINE with its
 * facts and lease (NODE_ONLINE when it was not online), and each attempt it still runs that
 * was lost meanwhile given back to it (reattach).
 */
export function registerNode(ctx: Context, hello: HelloFrame): void {
  const nodeId = hello.node_id;
  const at = ctx.now();
  const iso = at.toISOString();
  ctx.db.tx(() => {
    const before = nodesDb.getNode(ctx.db, nodeId);
    nodesDb.upsertNode(ctx.db, {
      id: nodeId,
      hostname: hello.hostname,
      status: "ONLINE",
      gpus: hello.gpus.map((g) => ({
        index: g.index,
        uuid: g.uuid,
        name: g.name,
        memory_total_mb: g.memory_total_mb,
        ...(g.fake ? { fake: true } : {}),
      })),
      cpu_count: hello.cpu_count,
      memory_mb: hello.memory_mb,
      disk_free_mb: hello.disk_free_mb,
      labels: hello.labels,
      agent_version: hello.agent_version,
      cpu_slots: hello.cpu_slots,
      avoid_foreign_gpus: hello.avoid_foreign_gpus,
      fake_gpus: hello.fake_gpus,
      last_heartbeat_at: iso,
    }, iso);
    nodesDb.setFenceAfter(ctx.db, nodeId, hello.fence_after_s ?? null);
    if (!before || before.status !== "ONLINE") {
      const gpus = hello.gpus.length;
      emitEvent(ctx, {
        type: "NODE_ONLINE",
        severity: "info",
        node_id: nodeId,
        message: `Node ${nodeId} online: ${gpus} ${hello.fake_gpus ? "fake " : ""}GPU${
          gpus === 1 ? "" : "s"
        }`,
        data: { gpus, fake_gpus: hello.fake_gpus },
      });
    }
    for (const p of hello.running) {
      const job = jobsDb.getJob(ctx.db, p.job_id);
      if (job) reattachLostAttempt(ctx, job, p.attempt, nodeId, at);
    }
    nodesChanged(ctx, nodeId, "ONLINE");
  });
}

/** Stores a heartbeat's telemetry and disk space on its node. */
export function recordNodeHeartbeat(ctx: Context, nodeId: string, hb: HeartbeatFrame): void {
  nodesDb.recordHeartbeat(
    ctx.db,
    nodeId,
    {
      gpus: hb.gpus,
      cpu_pct: hb.cpu_pct,
      mem_used_mb: hb.mem_used_mb,
      foreign: hb.foreign,
      ts: hb.ts,
    },
    hb.disk_free_mb,
    ctx.now().toISOString(),
  );
}

/** The cancel a job's agent should get now and the node it runs on, or null when none is pending. */
export function pendingCancel(
  ctx: Context,
  jobId: string,
): { node_id: string; cancel: CancelFrame } | null {
  const job = jobsDb.getJob(ctx.db, jobId);
  if (!job || !job.cancel_requested || !job.node_id || !LIVE.includes(job.status)) return null;
  return { node_id: job.node_id, cancel: cancelFrame(job) };
}

function cancelFrame(job: JobState): CancelFrame {
  return {
    type: "cancel",
    job_id: job.id,
    attempt: job.attempt,
    grace_s: job.grace_s ?? DEFAULT_GRACE_S,
    reason: job.reason ?? "cancel requested",
  };
}

/**
 * What to do about a process an agent says it runs: a copy the server did not give this
 * node is stale and killed at once; one whose cancel is pending gets the cancel again;
 * otherwise nothing.
 */
export function judgeOwnedProcess(
  ctx: Context,
  nodeId: string,
  p: OwnedProcess,
): { stale: string } | { cancel: CancelFrame } | null {
  const job = jobsDb.getJob(ctx.db, p.job_id);
  const ours = job && job.node_id === nodeId && job.attempt === p.attempt &&
    LIVE.includes(job.status);
  if (!ours) {
    return {
      stale: !job
        ? "the job does not exist"
        : `job "${job.id}" is ${job.status} at attempt ${job.attempt} on ${
          job.node_id ?? "no node"
        }`,
    };
  }
  if (job.cancel_requested && p.state !== "STOPPING") return { cancel: cancelFrame(job) };
  return null;
}

/** The attempts the server placed on a node that have not ended, as `job#attempt` keys. */
export function liveAttemptsOn(ctx: Context, nodeId: string): { id: string; attempt: number }[] {
  return jobsDb.jobsInStatus(ctx.db, LIVE).filter((j) => j.node_id === nodeId)
    .map((j) => ({ id: j.id, attempt: j.attempt }));
}

/**
 * Ends an attempt the node's agent keeps not listing in its heartbeats (its dispatch was
 * lost, or the agent forgot it) as AGENT_RESTART, unless it ended or moved on meanwhile.
 */
export function failVanishedAttempt(
  ctx: Context,
  nodeId: string,
  attempt: { id: string; attempt: number },
  misses: number,
): void {
  ctx.db.tx(() => {
    const fresh = jobsDb.getJob(ctx.db, attempt.id);
    if (!fresh || fresh.attempt !== attempt.attempt || !LIVE.includes(fresh.status)) return;
    endAttempt(ctx, fresh, {
      outcome: "FAILED",
      failure_class: "AGENT_RESTART",
      reason: `the agent on ${nodeId} no longer runs it (${misses} heartbeats without it)`,
      at: ctx.now(),
    });
  });
}

/**
 * A node silent for `silentS`: OFFLINE with NODE_OFFLINE, and each of its attempts LOST,
 * held by `holdFor` until its old copy has surely stopped. Nothing when it already was.
 */
export function markNodeOffline(
  ctx: Context,
  nodeId: string,
  silentS: number,
  holdFor: (job: JobState) => LeaseHold,
): void {
  ctx.db.tx(() => {
    if (!nodesDb.setNodeStatus(ctx.db, nodeId, "OFFLINE", ctx.now().toISOString())) return;
    emitEvent(ctx, {
      type: "NODE_OFFLINE",
      severity: "warning",
      node_id: nodeId,
      message: `Node ${nodeId} offline: no heartbeat for ${Math.round(silentS)} s`,
      data: { silent_s: Math.round(silentS) },
    });
    for (const job of jobsDb.jobsInStatus(ctx.db, LIVE).filter((j) => j.node_id === nodeId)) {
      endAttempt(ctx, job, {
        outcome: "LOST",
        failure_class: "NODE_LOST",
        reason: `node ${nodeId} silent ${Math.round(silentS)} s`,
        at: ctx.now(),
        lease: holdFor(job),
      });
    }
    nodesChanged(ctx, nodeId, "OFFLINE");
  });
}

/**
 * After a server restart: each queued job whose next attempt waits for a silent node's
 * lease waits a whole lease again from now (`holdFor` with no silence counted), because
 * that node's agent may have renewed its lease while this server was down.
 */
export function extendLeaseHolds(
  ctx: Context,
  holdFor: (nodeId: string, job: JobState) => LeaseHold,
): void {
  const now = ctx.now();
  ctx.db.tx(() => {
    for (const job of jobsDb.jobsInStatus(ctx.db, ["QUEUED"])) {
      if (!job.not_before || job.attempt < 2) continue;
      const nodeId = runsDb.getRunOfAttempt(ctx.db, job.id, job.attempt - 1)?.node_id;
      if (!nodeId) continue;
      const hold = holdFor(nodeId, job);
      if (hold.until === null || hold.until.getTime() <= Date.parse(job.not_before)) continue;
      jobsDb.updateJob(
        ctx.db,
        job.id,
        {
          not_before: hold.until.toISOString(),
          reason: `The server restarted while ${nodeId} was silent; next attempt at ${
            clockTime(hold.until)
          } unless it returns`,
        },
        now.toISOString(),
        ["QUEUED"],
      );
    }
  });
}

/** Tells the scheduler that a node came or went (after the commit). */
function nodesChanged(ctx: Context, nodeId: string, status: NodeRecord["status"]): void {
  ctx.db.afterCommit(() => ctx.bus.publish(topics.nodes, { node_id: nodeId, status }));
}
