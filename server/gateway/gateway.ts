/**
 * The agent gateway: one WebSocket per GPU host at `/api/agent/ws`. It owns the sockets and
 * the clocks: it reads frames, refuses what may not be said, acks data after it is
 * committed, sends dispatches and cancels, and notices silent nodes. What each frame or
 * silence changes in the store is the nodes service's (`server/nodes/service.ts`) and the
 * frame applier's (`apply_frame.ts`); the scheduler loop hears of node changes on the bus.
 */
import {
  type DispatchSpec,
  type HeartbeatFrame,
  type HelloFrame,
  type OwnedProcess,
  type ServerFrame,
  STREAMS,
} from "../../protocol/agent.ts";
import { cursors, isTransientStoreError, nodes as nodesDb, tokens as tokensDb } from "../db/mod.ts";
import type { JobState } from "../db/jobs.ts";
import { parseAgentFrame } from "./parse_frame.ts";
import { topics } from "../bus/bus.ts";
import type { Context } from "../context.ts";
import { DEFAULT_GRACE_S, type LeaseHold } from "../jobs/transitions.ts";
import {
  extendLeaseHolds,
  failVanishedAttempt,
  judgeOwnedProcess,
  liveAttemptsOn,
  markNodeOffline,
  pendingCancel,
  recordNodeHeartbeat,
  registerNode,
} from "../nodes/service.ts";
import { LEASE_MARGIN_MS, leaseHold } from "../nodes/lease.ts";
import type { NodeLink } from "../scheduler/loop.ts";
import type { DataFrame } from "../../protocol/agent.ts";
import {
  type FrameResult,
  type IngestLag,
  IngestQueue,
  type IngestQueueOptions,
  type IngestStatus,
} from "./ingest_queue.ts";

/** The largest agent frame the gateway reads; a larger one closes the connection. */
export const MAX_FRAME_CHARS = 16 * 1024 * 1024;

/**
 * Open agent connections a server takes at most, unless configured (`max_agent_connections`).
 * Deno reads each WebSocket message whole, up to 64 MiB, before the gateway can refuse it, so
 * this cap is what bounds the memory parallel large frames can take: about 64 MiB each.
 */
export const MAX_AGENT_CONNECTIONS = 32;
/** A connection that has not said hello by then is closed, so idle ones cannot fill the cap. */
export const HELLO_WITHIN_MS = 30_000;
/** Open connections of one node's own agent token (one live, one reconnecting). */
export const MAX_CONNECTIONS_PER_NODE_TOKEN = 2;

/** A node's old connection counts as gone after at least this much silence (see #helloRefusal). */
const MIN_GONE_MS = 3_000;

export interface GatewayOptions {
  /** Silence after which a node is OFFLINE and its jobs LOST. @default 90_000 */
  nodeTimeoutMs?: number;
  /** How often liveness is checked. @default 5_000 */
  livenessIntervalMs?: number;
  /** Heartbeats in a row that may miss a dispatched job before it is declared gone. @default 2 */
  missedHeartbeats?: number;
  /** A monotonic clock in ms (liveness must not jump with the wall clock). */
  monotonic?: () => number;
  /** @default LEASE_MARGIN_MS */
  leaseMarginMs?: number;
  /** Open agent connections at most. @default MAX_AGENT_CONNECTIONS */
  maxConnections?: number;
  /** How data frames are grouped into transactions (see `ingest_queue.ts`). */
  ingest?: IngestQueueOptions;
}

interface Session {
  socket: WebSocket;
  nodeId: string | null;
  /** The node the connection's token is bound to; null for the shared agent token. */
  boundNode: string | null;
  /**
   * Set when a data frame could not be applied (a full disk, say). Later frames of the same
   * connection are ignored, not applied: applying frame n+1 would move the cursor past n,
   * and n would be lost. The agent reconnects and replays from the cursor.
   */
  broken?: boolean;
}

interface NodeState {
  session: Session | null;
  lastSeen: number;
  /** Time between this node's last two heartbeats, once known. */
  heartbeatGapMs: number | null;
  lastHeartbeat: number | null;
  foreign: Map<number, number>;
  /** Jobs assigned here that the agent's heartbeats did not list, and how many times. */
  misses: Map<string, number>;
  /** The agent's lease (hello `fence_after_s`); null: it holds none. */
  fenceAfterS: number | null;
  /** What the agent held unacknowledged at its last heartbeat. */
  backlog: { frames: number; oldest_s: number } | null;
}

export class AgentGateway implements NodeLink {
  #ctx: Context;
  #timeoutMs: number;
  #livenessMs: number;
  #missedHeartbeats: number;
  #monotonic: () => number;
  #leaseMarginMs: number;
  /** When the last liveness pass ran (monotonic), to tell the server's own stalls apart. */
  #lastPass: number | null = null;
  #nodes = new Map<string, NodeState>();
  /** Every open connection, said hello or not. */
  #sessions = new Set<Session>();
  #maxConnections: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #unsubscribe = () => {};
  #ingest: IngestQueue;

  constructor(ctx: Context, options: GatewayOptions = {}) {
    this.#ctx = ctx;
    this.#timeoutMs = options.nodeTimeoutMs ?? 90_000;
    this.#livenessMs = options.livenessIntervalMs ?? 5_000;
    this.#missedHeartbeats = options.missedHeartbeats ?? 2;
    this.#monotonic = options.monotonic ?? (() => performance.now());
    this.#leaseMarginMs = options.leaseMarginMs ?? LEASE_MARGIN_MS;
    this.#maxConnections = options.maxConnections ?? MAX_AGENT_CONNECTIONS;
    this.#ingest = new IngestQueue(ctx, { monotonic: this.#monotonic, ...options.ingest });
  }

  /** How far behind storing agents' data frames the server is. */
  ingestLag(): IngestLag {
    return this.#ingest.lag();
  }

  /** How far behind the server is, with what its agents hold back (`GET /api/status`). */
  ingestStatus(): IngestStatus {
    const lag = this.#ingest.lag();
    const nodes: IngestStatus["nodes"] = [];
    for (const [nodeId, st] of this.#nodes) {
      if (!st.session || !st.backlog || st.backlog.frames === 0) continue;
      // As of the agent's last heartbeat (not aged since: frames in flight then are usually
      // acked a moment later).
      nodes.push({
        node_id: nodeId,
        unsent_frames: st.backlog.frames,
        oldest_s: round1(st.backlog.oldest_s),
      });
    }
    nodes.sort((a, b) => b.oldest_s - a.oldest_s);
    return {
      behind_s: round1(Math.max(lag.max_wait_s, lag.oldest_pending_s, nodes[0]?.oldest_s ?? 0)),
      pending_frames: lag.pending_frames,
      unsent_frames: nodes.reduce((n, x) => n + x.unsent_frames, 0),
      commits_per_s: round1(lag.commits_per_s),
      frames_per_s: round1(lag.frames_per_s),
      window_s: lag.window_s,
      nodes,
    };
  }

  /** Why another connection (of a token bound to `boundNode`, null: shared) is refused now. */
  connectionRefusal(boundNode: string | null): string | null {
    if (this.#sessions.size >= this.#maxConnections) {
      return `the server has ${this.#sessions.size} agent connections open, at most ` +
        `${this.#maxConnections} (max_agent_connections in server.yaml); try again later`;
    }
    if (boundNode !== null) {
      const mine = [...this.#sessions].filter((s) => s.boundNode === boundNode).length;
      if (mine >= MAX_CONNECTIONS_PER_NODE_TOKEN) {
        return `node "${boundNode}"'s token has ${mine} connections open, at most ` +
          `${MAX_CONNECTIONS_PER_NODE_TOKEN}`;
      }
    }
    return null;
  }

  /**
   * Starts liveness checks. Nodes ONLINE in the store get a full timeout to
   * reconnect. While this server was down its agents saw their connections refused and kept
   * their leases (a server that is not running cannot requeue anything), so every lease is
   * counted afresh from now: held attempts wait at least a whole lease again.
   */
  start(): void {
    if (this.#timer !== undefined) return;
    const now = this.#monotonic();
    this.#lastPass = now;
    for (const n of nodesDb.listNodes(this.#ctx.db)) {
      if (n.status === "ONLINE") this.#state(n.id).lastSeen = now;
    }
    extendLeaseHolds(this.#ctx, (nodeId, job) => this.#leaseHold(this.#state(nodeId), job, 0));
    this.#unsubscribe = this.#ctx.bus.subscribe<{ job_id: string; reason: string }>(
      topics.jobs,
      (m) => {
        if (m.reason === "cancel") this.#forwardCancel(m.job_id);
      },
    );
    this.#timer = setInterval(() => this.runOnce(), this.#livenessMs);
  }

  stop(): void {
    // Frames received are stored (and acknowledged) before the sockets close.
    this.#ingest.flush();
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#unsubscribe();
    for (const s of this.#nodes.values()) {
      try {
        s.session?.socket.close(1001, "server stopping");
      } catch {
        // already closed
      }
    }
  }

  /**
   * One liveness pass: nodes silent past the timeout go OFFLINE and their jobs are LOST. A
   * pass that comes late means this server's own loop was stalled (a heavy request, a full
   * disk): heartbeats that arrived meanwhile are not read yet, so the delay is not counted as
   * the nodes' silence; every node's deadline moves by it. Returns the lag it forgave (ms).
   */
  runOnce(): { offline: string[]; lag_ms: number } {
    const now = this.#monotonic();
    const lag = this.#lastPass === null ? 0 : Math.max(0, now - this.#lastPass - this.#livenessMs);
    this.#lastPass = now;
    if (lag > 0) { for (const st of this.#nodes.values()) st.lastSeen += lag; }
    if (lag >= 1000) {
      this.#ctx.log.warn("the server's loop was stalled", { lag_ms: Math.round(lag) });
    }
    const offline: string[] = [];
    for (const n of nodesDb.listNodes(this.#ctx.db)) {
      if (n.status !== "ONLINE") continue;
      const st = this.#state(n.id);
      if (now - st.lastSeen < this.#timeoutMs) continue;
      offline.push(n.id);
      this.#markOffline(n.id, now - st.lastSeen);
    }
    return { offline, lag_ms: lag };
  }

  /** Takes over an upgraded WebSocket of an agent whose token is bound to `boundNode` (null: shared). */
  attach(socket: WebSocket, boundNode: string | null = null): void {
    const session: Session = { socket, nodeId: null, boundNode };
    this.#sessions.add(session);
    const helloBy = setTimeout(() => {
      if (!session.nodeId) this.#refuse(session, 1008, `no hello within ${HELLO_WITHIN_MS} ms`);
    }, HELLO_WITHIN_MS);
    socket.onmessage = (e) => this.#onMessage(session, e.data);
    socket.onclose = () => {
      clearTimeout(helloBy);
      this.#sessions.delete(session);
      if (session.nodeId) {
        const st = this.#state(session.nodeId);
        if (st.session === session) st.session = null;
      }
    };
    socket.onerror = () => {};
  }

  // NodeLink, for the scheduler loop.
  connectedNodes(): Set<string> {
    const out = new Set<string>();
    for (const [id, st] of this.#nodes) if (st.session) out.add(id);
    return out;
  }

  foreignMemory(nodeId: string): Map<number, number> {
    return this.#nodes.get(nodeId)?.foreign ?? new Map();
  }

  sendDispatch(nodeId: string, spec: DispatchSpec): boolean {
    return this.#send(nodeId, { type: "dispatch", job: spec });
  }

  #state(nodeId: string): NodeState {
    let st = this.#nodes.get(nodeId);
    if (!st) {
      st = {
        session: null,
        lastSeen: this.#monotonic(),
        foreign: new Map(),
        misses: new Map(),
        fenceAfterS: nodesDb.fenceAfterOf(this.#ctx.db, nodeId),
        heartbeatGapMs: null,
        lastHeartbeat: null,
        backlog: null,
      };
      this.#nodes.set(nodeId, st);
    }
    return st;
  }

  #send(nodeId: string, frame: ServerFrame): boolean {
    const socket = this.#nodes.get(nodeId)?.session?.socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    socket.send(JSON.stringify(frame));
    return true;
  }

  #sendTo(session: Session, frame: ServerFrame): void {
    if (session.socket.readyState === WebSocket.OPEN) session.socket.send(JSON.stringify(frame));
  }

  #onMessage(session: Session, data: unknown): void {
    if (session.broken) return;
    const size = typeof data === "string"
      ? data.length
      : data instanceof ArrayBuffer
      ? data.byteLength
      : data instanceof Blob
      ? data.size
      : 0;
    if (size > MAX_FRAME_CHARS) {
      // Already read whole (Deno has no earlier limit); closing stops a second one.
      this.#refuse(session, 1009, `a frame of ${size} bytes is larger than ${MAX_FRAME_CHARS}`);
      return;
    }
    let frame;
    try {
      if (typeof data !== "string") throw new Error("frames are JSON text");
      const parsed = parseAgentFrame(JSON.parse(data));
      if (!parsed.success) {
        const i = parsed.error.issues[0];
        throw new Error(`${i.path.join(".") || "frame"}: ${i.message}`);
      }
      frame = parsed.data;
    } catch (err) {
      this.#sendTo(session, { type: "error", message: `Invalid frame: ${(err as Error).message}` });
      return;
    }
    if (frame.type !== "hello" && frame.type !== "heartbeat" && session.nodeId) {
      this.#state(session.nodeId).lastSeen = this.#monotonic();
      const nodeId = session.nodeId;
      const data = frame as DataFrame;
      // Applied with the frames of every connection that arrive meanwhile, in one
      // transaction; acked after its commit.
      this.#ingest.add(
        nodeId,
        data,
        (result) => this.#onApplied(session, nodeId, data, result),
        () => session.broken === true,
      );
      return;
    }
    try {
      // What a hello or heartbeat decides reads the store: the node's data frames received
      // before it are stored first, as when each frame was applied on arrival.
      const nodeId = frame.type === "hello" ? frame.node_id : session.nodeId;
      if (nodeId) this.#ingest.flushNode(nodeId);
      if (session.broken) return;
      if (frame.type === "hello") return this.#onHello(session, frame);
      if (!session.nodeId) {
        this.#sendTo(session, { type: "error", message: "Send hello first" });
        return;
      }
      this.#state(session.nodeId).lastSeen = this.#monotonic();
      if (frame.type === "heartbeat") return this.#onHeartbeat(session, session.nodeId, frame);
    } catch (err) {
      this.#onApplied(session, session.nodeId, frame, {
        error: err,
        transient: isTransientStoreError(err),
      });
    }
  }

  /** After the transaction that held a data frame: its ack, or why it failed. */
  #onApplied(
    session: Session,
    nodeId: string | null,
    frame: { type: string },
    result: FrameResult,
  ): void {
    if (session.broken) return;
    if ("outcome" in result) {
      const outcome = result.outcome;
      if (outcome.refused) this.#sendTo(session, { type: "error", message: outcome.refused });
      if (outcome.kill && nodeId) {
        this.#kill(nodeId, outcome.kill.job_id, outcome.kill.attempt, outcome.kill.reason);
      }
      // Acked only after the transaction committed.
      if (outcome.ack) this.#sendTo(session, { type: "ack", ...outcome.ack });
      return;
    }
    const { error: err, transient } = result;
    this.#ctx.log.error(
      transient
        ? "agent frame could not be stored now; closing the connection so the agent replays it"
        : "agent frame failed",
      { node: nodeId, type: frame.type, error: String((err as Error)?.stack ?? err) },
    );
    this.#sendTo(session, {
      type: "error",
      message: `The server failed to apply a ${frame.type} frame`,
    });
    // A store that cannot take writes now (full, busy, I/O error): nothing after this frame
    // may be applied, or the cursor would pass it. Any other failure is about the frame
    // itself and would fail again on every replay, so later frames go on.
    if (!transient) return;
    session.broken = true;
    try {
      session.socket.close(1011, "the server could not store a frame");
    } catch {
      // already closed
    }
  }

  /** Sends an error and closes the connection: nothing more of it is read. */
  #refuse(session: Session, code: number, message: string): void {
    session.broken = true;
    this.#ctx.log.warn("agent connection refused", { node: session.nodeId, code, message });
    this.#sendTo(session, { type: "error", message });
    try {
      session.socket.close(code, message.slice(0, 120));
    } catch {
      // already closed
    }
  }

  /** Why this connection may not speak for `nodeId`, or null when it may. */
  #helloRefusal(session: Session, nodeId: string): string | null {
    if (session.nodeId !== null && session.nodeId !== nodeId) {
      return `this connection speaks for node "${session.nodeId}", not "${nodeId}"`;
    }
    if (session.boundNode !== null && session.boundNode !== nodeId) {
      return `the token is bound to node "${session.boundNode}", not "${nodeId}"`;
    }
    if (session.boundNode === null && tokensDb.nodeHasToken(this.#ctx.db, nodeId)) {
      return `node "${nodeId}" has its own agent token; the shared agent token cannot speak for it`;
    }
    // The node's own token proves it is the node: its agent reconnecting has given up on the
    // old connection (a half-open one the server has not noticed yet).
    if (session.boundNode === nodeId) return null;
    const other = this.#nodes.get(nodeId)?.session;
    if (other && other !== session && other.socket.readyState === WebSocket.OPEN) {
      const st = this.#state(nodeId);
      const silentMs = this.#monotonic() - st.lastSeen;
      // Gone: silent for two heartbeats (as this node sends them), at most the node timeout,
      // so a real agent gets back in well before its lease runs out.
      const goneAfterMs = st.heartbeatGapMs === null
        ? this.#timeoutMs
        : Math.min(this.#timeoutMs, Math.max(2 * st.heartbeatGapMs, MIN_GONE_MS));
      if (silentMs < goneAfterMs) {
        return `node "${nodeId}" already has a live connection (heard ${
          Math.round(silentMs / 1000)
        } s ago); a second one is refused until it closes or stays silent ${
          Math.round(goneAfterMs / 1000)
        } s`;
      }
    }
    return null;
  }

  #onHello(session: Session, hello: HelloFrame): void {
    const nodeId = hello.node_id;
    const refusal = this.#helloRefusal(session, nodeId);
    if (refusal) {
      this.#refuse(session, 4003, `Refused hello: ${refusal}`);
      return;
    }
    const st = this.#state(nodeId);
    if (st.session && st.session !== session) {
      // The old connection is closed or silent past the timeout: the agent gave up on it.
      try {
        st.session.socket.close(4000, "replaced by a newer connection");
      } catch {
        // already closed
      }
    }
    session.nodeId = nodeId;
    st.session = session;
    st.lastSeen = this.#monotonic();
    st.misses.clear();
    st.fenceAfterS = hello.fence_after_s ?? null;
    st.lastHeartbeat = null;
    st.backlog = null;
    registerNode(this.#ctx, hello);
    for (const stream of STREAMS) {
      this.#sendTo(session, {
        type: "ack",
        stream,
        seq: cursors.getCursor(this.#ctx.db, nodeId, stream),
      });
    }
    this.#sendTo(session, { type: "lease" });
    this.#reconcileOwned(nodeId, hello.running);
  }

  #onHeartbeat(session: Session, nodeId: string, hb: HeartbeatFrame): void {
    const st = this.#state(nodeId);
    const now = this.#monotonic();
    if (st.lastHeartbeat !== null) st.heartbeatGapMs = now - st.lastHeartbeat;
    st.lastHeartbeat = now;
    st.backlog = hb.backlog ?? null;
    st.foreign = new Map();
    for (const f of hb.foreign) {
      st.foreign.set(f.gpu_index, (st.foreign.get(f.gpu_index) ?? 0) + (f.used_mb ?? 1));
    }
    recordNodeHeartbeat(this.#ctx, nodeId, hb);
    this.#sendTo(session, { type: "lease" });
    this.#reconcileOwned(nodeId, hb.running);
    // An agent with data frames still to send may be holding the frame that ends an attempt it
    // no longer lists (the attempt ended while the server was away): such a heartbeat proves
    // nothing missing. Agents that do not report a backlog are judged as before.
    if (!hb.backlog || hb.backlog.frames === 0) this.#checkMissing(nodeId, hb.running);
  }

  /** Kills copies the server did not give this node; resends cancels that are still pending. */
  #reconcileOwned(nodeId: string, running: OwnedProcess[]): void {
    for (const p of running) {
      const verdict = judgeOwnedProcess(this.#ctx, nodeId, p);
      if (verdict && "stale" in verdict) {
        this.#kill(nodeId, p.job_id, p.attempt, `stale copy: ${verdict.stale}`);
      } else if (verdict) this.#send(nodeId, verdict.cancel);
    }
  }

  /** A job the server placed here that the agent keeps not listing is gone (dispatch lost, or the agent forgot it). */
  #checkMissing(nodeId: string, running: OwnedProcess[]): void {
    const st = this.#state(nodeId);
    const listed = new Set(running.map((p) => `${p.job_id}#${p.attempt}`));
    const seen = new Set<string>();
    for (const attempt of liveAttemptsOn(this.#ctx, nodeId)) {
      const key = `${attempt.id}#${attempt.attempt}`;
      seen.add(key);
      if (listed.has(key)) {
        st.misses.delete(key);
        continue;
      }
      const misses = (st.misses.get(key) ?? 0) + 1;
      st.misses.set(key, misses);
      if (misses < this.#missedHeartbeats) continue;
      st.misses.delete(key);
      failVanishedAttempt(this.#ctx, nodeId, attempt, misses);
    }
    for (const key of st.misses.keys()) if (!seen.has(key)) st.misses.delete(key);
  }

  #kill(nodeId: string, jobId: string, attempt: number, reason: string): void {
    this.#ctx.log.warn("killing a stale copy", { node: nodeId, job: jobId, attempt, reason });
    this.#send(nodeId, { type: "cancel", job_id: jobId, attempt, grace_s: 0, reason });
  }

  #forwardCancel(jobId: string): void {
    const pending = pendingCancel(this.#ctx, jobId);
    if (pending) this.#send(pending.node_id, pending.cancel);
  }

  /**
   * When a lost job of a node silent for `silentMs` may start again: once the agent's lease
   * ran out (it stops its jobs after `fence_after_s` without the server), the job's kill
   * grace and a margin. No lease: never by itself.
   */
  #leaseHold(st: NodeState, job: JobState, silentMs: number): LeaseHold {
    return leaseHold(
      {
        fenceAfterS: st.fenceAfterS,
        graceS: job.grace_s ?? DEFAULT_GRACE_S,
        marginMs: this.#leaseMarginMs,
      },
      silentMs,
      this.#ctx.now(),
    );
  }

  #markOffline(nodeId: string, silentMs: number): void {
    const st = this.#state(nodeId);
    try {
      st.session?.socket.close(4001, "no heartbeat");
    } catch {
      // already closed
    }
    st.session = null;
    markNodeOffline(
      this.#ctx,
      nodeId,
      silentMs / 1000,
      (job) => this.#leaseHold(st, job, silentMs),
    );
  }
}

const round1 = (x: number) => Math.round(x * 10) / 10;
