/**
 * Group commit of agent data frames. Frames from every connection wait here for a moment (at
 * most `maxDelayMs`, and never past `maxFrames` or `maxItems` points and lines) and are then
 * applied together in one transaction, each in its own savepoint: a frame that fails alone is
 * undone alone, as when each frame had its own transaction. Each frame's outcome (and so its
 * ack) is reported only after the COMMIT that holds it returned: acked still means durable.
 * A transaction that cannot be written at all reports every frame in it as failed, and nothing
 * of it is acknowledged.
 *
 * Frames that arrive while one transaction is being written (the store is synchronous, so they
 * wait in the sockets meanwhile) go into the next one: the more the server has to do, the
 * larger and fewer its transactions, and the per-transaction costs (BEGIN, COMMIT, the metric
 * keys' summaries, the point sequence, the live fan-out) are paid once for all of them.
 */
import type { DataFrame } from "../../protocol/agent.ts";
import type { Context } from "../context.ts";
import { isTransientStoreError } from "../db/mod.ts";
import { applyDataFrame, type FrameOutcome } from "./apply_frame.ts";

/** How long the first frame of a group waits for others, unless configured. */
export const GROUP_DELAY_MS = 2;
/** Frames one transaction holds at most, unless configured. */
export const GROUP_MAX_FRAMES = 200;
/**
 * Points and lines one transaction holds at most (a frame is never split), unless configured:
 * a transaction holds the server's only thread while it is written (about 30 µs a point on
 * the development machine), so requests wait at most about that long behind one.
 */
export const GROUP_MAX_ITEMS = 2_000;

/** What became of a frame: applied (or skipped) and committed, or failed. */
export type FrameResult =
  | { outcome: FrameOutcome }
  | {
    error: unknown;
    /** The store could not take writes (nothing after this frame may be applied). */
    transient: boolean;
  };

export interface IngestQueueOptions {
  /** @default GROUP_DELAY_MS */
  maxDelayMs?: number;
  /** @default GROUP_MAX_FRAMES */
  maxFrames?: number;
  /** @default GROUP_MAX_ITEMS */
  maxItems?: number;
  /** Schedules a flush (tests and the profile flush by hand). @default setTimeout */
  schedule?: (flush: () => void, ms: number) => void;
  /** A monotonic clock in ms. @default performance.now */
  monotonic?: () => number;
}

interface Item {
  nodeId: string;
  frame: DataFrame;
  items: number;
  at: number;
  /** True once the frame's connection has given up: the frame is dropped, not applied. */
  dropped: () => boolean;
  done: (result: FrameResult) => void;
}

/** How far behind the store is: what waits to be committed, and for how long. */
export interface IngestLag {
  /** Frames received and not yet committed. */
  pending_frames: number;
  /** The age of the oldest of them, in seconds (0 when none waits). */
  oldest_pending_s: number;
  /** The longest a frame waited for its commit over the last `window_s` seconds. */
  max_wait_s: number;
  window_s: number;
  /** Transactions and frames over that window, per second. */
  commits_per_s: number;
  frames_per_s: number;
}

/**
 * How far behind storing agents' data the server is (`GET /api/status`, the Nodes page): what
 * it received and has not committed, and what agents hold back in their spools (unsent, or
 * sent and not yet acknowledged), from their last heartbeats.
 */
export interface IngestStatus {
  /**
   * How long data waits to be stored, in seconds: the age of the oldest frame an agent held
   * unacknowledged at its last heartbeat, or the longest a frame waited here for its commit
   * over the last `window_s` seconds, whichever is more.
   */
  behind_s: number;
  /** Frames received and not yet committed. */
  pending_frames: number;
  /** Frames connected agents hold that the server has not stored (their last heartbeats). */
  unsent_frames: number;
  /** Transactions and frames committed a second, over the last `window_s` seconds. */
  commits_per_s: number;
  frames_per_s: number;
  window_s: number;
  /** Connected nodes whose agent holds frames back, most behind first. */
  nodes: { node_id: string; unsent_frames: number; oldest_s: number }[];
}

/** Points or lines a data frame carries (1 for any other frame). */
export function frameItems(frame: DataFrame): number {
  switch (frame.type) {
    case "metrics":
      return Math.max(1, frame.points.length);
    case "logs":
      return Math.max(1, frame.lines.length);
    case "sdk":
      return Math.max(
        1,
        (frame.batch.points?.length ?? 0) + (frame.batch.logs?.length ?? 0),
      );
    default:
      return 1;
  }
}

const WINDOW_MS = 10_000;

export class IngestQueue {
  #ctx: Context;
  #queue: Item[] = [];
  #head = 0;
  #scheduled = false;
  #scheduledMs = 0;
  #flushToken = 0;
  #maxDelayMs: number;
  #maxFrames: number;
  #maxItems: number;
  #schedule: (flush: () => void, ms: number) => void;
  #monotonic: () => number;
  /** Per commit in the window: when, how many frames, the longest wait (ms). */
  #commits: { at: number; frames: number; wait: number }[] = [];

  constructor(ctx: Context, options: IngestQueueOptions = {}) {
    this.#ctx = ctx;
    this.#maxDelayMs = options.maxDelayMs ?? GROUP_DELAY_MS;
    this.#maxFrames = options.maxFrames ?? GROUP_MAX_FRAMES;
    this.#maxItems = options.maxItems ?? GROUP_MAX_ITEMS;
    this.#schedule = options.schedule ?? ((f, ms) => setTimeout(f, ms));
    this.#monotonic = options.monotonic ?? (() => performance.now());
  }

  /** Frames waiting for their transaction. */
  get pending(): number {
    return this.#queue.length - this.#head;
  }

  /**
   * Queues a frame of `nodeId`; `done` hears of it after its transaction (frames of one
   * connection are applied and reported in the order they were added).
   */
  add(
    nodeId: string,
    frame: DataFrame,
    done: (result: FrameResult) => void,
    dropped: () => boolean = () => false,
  ): void {
    this.#queue.push({
      nodeId,
      frame,
      items: frameItems(frame),
      at: this.#monotonic(),
      dropped,
      done,
    });
    // A full group does not wait for more, but it is still written on a turn of its own, never
    // inside the socket's message handler: a burst of messages would otherwise write one
    // transaction after another before any timer or request is served.
    this.#scheduleFlush(this.pending >= this.#maxFrames ? 0 : this.#maxDelayMs);
  }

  /**
   * One transaction per turn of the event loop: between two, requests (a status read, a
   * heartbeat) are served and newly arrived frames join the next group.
   */
  #scheduleFlush(ms: number): void {
    if (this.#scheduled && ms >= this.#scheduledMs) return;
    // A group that filled while its flush waited is written sooner; the flush asked for
    // before finds itself replaced and does nothing.
    const token = ++this.#flushToken;
    this.#scheduled = true;
    this.#scheduledMs = ms;
    this.#schedule(() => {
      if (token !== this.#flushToken) return;
      this.#scheduled = false;
      this.#commitOne();
      this.#compact();
      if (this.pending > 0) this.#scheduleFlush(0);
    }, ms);
  }

  /** Applies everything queued now, in transactions of at most the configured size. */
  flush(): void {
    while (this.pending > 0) this.#commitOne();
    this.#compact();
  }

  /**
   * Applies the queued frames of one node now (in order; other nodes' frames keep their
   * place): what is decided on that node's hello or heartbeat then sees all it sent before.
   */
  flushNode(nodeId: string): void {
    const rest: Item[] = [];
    const mine: Item[] = [];
    for (let i = this.#head; i < this.#queue.length; i++) {
      const item = this.#queue[i];
      (item.nodeId === nodeId ? mine : rest).push(item);
    }
    if (mine.length === 0) return;
    this.#queue = mine;
    this.#head = 0;
    this.flush();
    this.#queue = rest;
  }

  #compact(): void {
    if (this.pending === 0) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head > 1024) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
  }

  #commitOne(): void {
    const group: Item[] = [];
    let items = 0;
    while (this.#head < this.#queue.length && group.length < this.#maxFrames) {
      const item = this.#queue[this.#head];
      if (group.length > 0 && items + item.items > this.#maxItems) break;
      this.#head++;
      if (item.dropped()) continue;
      group.push(item);
      items += item.items;
    }
    if (group.length === 0) return;
    const db = this.#ctx.db;
    let results: FrameResult[];
    try {
      results = db.tx(() =>
        group.map((item): FrameResult => {
          // A frame of a connection that failed earlier in this group is not applied: the
          // cursor would pass the failed one.
          if (item.dropped()) return { error: new Error("connection closed"), transient: true };
          try {
            return {
              outcome: db.savepoint(() => applyDataFrame(this.#ctx, item.nodeId, item.frame)),
            };
          } catch (err) {
            // The store cannot take writes: the whole transaction goes, and with it every
            // frame of this group (none is acknowledged; their agents replay them).
            if (isTransientStoreError(err)) throw err;
            return { error: err, transient: false };
          }
        })
      );
    } catch (err) {
      for (const item of group) item.done({ error: err, transient: true });
      return;
    }
    const now = this.#monotonic();
    let wait = 0;
    for (const item of group) wait = Math.max(wait, now - item.at);
    this.#commits.push({ at: now, frames: group.length, wait });
    this.#prune(now);
    for (let i = 0; i < group.length; i++) {
      try {
        group[i].done(results[i]);
      } catch (err) {
        this.#ctx.log.error("a frame's ack failed", { error: String(err) });
      }
    }
  }

  #prune(now: number): void {
    let drop = 0;
    while (drop < this.#commits.length && now - this.#commits[drop].at > WINDOW_MS) drop++;
    if (drop) this.#commits.splice(0, drop);
  }

  /** How far behind the store is now. */
  lag(): IngestLag {
    const now = this.#monotonic();
    this.#prune(now);
    const oldest = this.pending > 0 ? now - this.#queue[this.#head].at : 0;
    let maxWait = oldest;
    let frames = 0;
    for (const c of this.#commits) {
      maxWait = Math.max(maxWait, c.wait);
      frames += c.frames;
    }
    return {
      pending_frames: this.pending,
      oldest_pending_s: oldest / 1000,
      max_wait_s: maxWait / 1000,
      window_s: WINDOW_MS / 1000,
      commits_per_s: this.#commits.length / (WINDOW_MS / 1000),
      frames_per_s: frames / (WINDOW_MS / 1000),
    };
  }
}
