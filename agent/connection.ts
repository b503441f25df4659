/**
 * The agent's one outbound WebSocket to the server: connect (with backoff), `hello`, replay
 * what the server has not acknowledged, then send live frames and heartbeats. The spool is
 * the source of every data frame sent, so a dropped socket loses nothing.
 */
import { openWebSocket } from "../lib/websocket.ts";
import {
  type HeartbeatFrame,
  type HelloFrame,
  type ServerFrame,
  serverFrame,
  type StreamName,
} from "../protocol/agent.ts";
import type { WireDataFrame } from "./frames.ts";
import type { Logger } from "./log.ts";
import type { Spool } from "./spool.ts";

/** First reconnect delay. */
export const MIN_BACKOFF_MS = 1000;
/** Longest reconnect delay. */
export const MAX_BACKOFF_MS = 30_000;
/**
 * How many heartbeat intervals the server may leave a hello or heartbeat unanswered before
 * the agent gives the connection up and connects again.
 */
export const ANSWER_TIMEOUT_HEARTBEATS = 3;
/** Frames read from the spool per replay step. */
const REPLAY_BATCH = 500;
/** Replay pauses while the socket holds more than this many unsent bytes. */
const REPLAY_HIGH_WATER = 4 * 1024 * 1024;
/**
 * Data frames of one stream sent and not yet acknowledged, at most. A server that falls
 * behind acknowledges later, so the agent sends less: what it cannot send waits in the spool
 * (as while disconnected) and goes out as acks come back, oldest first. Small, so that an
 * overloaded server's queue (what it has read and must work through before a status read or
 * a heartbeat is answered) stays short; with acks back within 100 ms it still passes 160
 * frames a second.
 */
export const MAX_IN_FLIGHT = 16;

/**
 * Delay before reconnect attempt `attempt` (0-based): exponential from 1 s, capped at 30 s,
 * with jitter in the upper half so that agents restarted together do not reconnect together.
 */
export function backoffDelay(attempt: number, random: () => number): number {
  const ceiling = Math.min(MAX_BACKOFF_MS, MIN_BACKOFF_MS * 2 ** Math.max(0, attempt));
  const jittered = ceiling * (0.5 + 0.5 * random());
  return Math.round(Math.min(MAX_BACKOFF_MS, Math.max(MIN_BACKOFF_MS, jittered)));
}

/** Commands the server sends that the job manager handles. */
export type ServerCommand = Extract<ServerFrame, { type: "dispatch" | "cancel" }>;

/** Options of {@linkcode Connection}. */
export interface ConnectionOptions {
  /** `ws(s)://…/api/agent/ws`. */
  url: string;
  token: string;
  spool: Spool;
  log: Logger;
  /** Builds the hello frame for each new connection. */
  hello(): HelloFrame | Promise<HelloFrame>;
  /** Builds a heartbeat frame. */
  heartbeat(): HeartbeatFrame | Promise<HeartbeatFrame>;
  /** Receives dispatch and cancel commands. */
  onCommand(command: ServerCommand): void;
  heartbeatMs: number;
  /** Reconnect delay for a 0-based attempt. @default backoffDelay with Math.random */
  backoff?: (attempt: number) => number;
  /**
   * The server heard us: a frame sent at `sentAt` (monotonic ms) was answered, or the
   * connection was refused (nothing listens, so no server runs that could requeue a job).
   */
  onLease?(sentAt: number): void;
  /** A monotonic clock in ms. @default performance.now */
  monotonic?: () => number;
  /**
   * Longest reconnect delay: a refused attempt renews the lease, so attempts must come more
   * often than the lease runs out. @default MAX_BACKOFF_MS
   */
  maxBackoffMs?: number;
  /** Whether nothing listens at the server's address now. @default a TCP connect to it */
  serverRefuses?: () => Promise<boolean>;
  /**
   * A connection whose opening handshake, hello or heartbeat goes unanswered this long is
   * given up and a new one made: a half-open connection (the server's side gone without a
   * word reaching the agent) would otherwise hold the agent, silent, until its lease ran out.
   * @default ANSWER_TIMEOUT_HEARTBEATS × heartbeatMs
   */
  answerTimeoutMs?: number;
}

/** True when a TCP connection to the URL's host and port is refused: no server process listens. */
export async function connectionRefused(url: string): Promise<boolean> {
  const u = new URL(url);
  const port = Number(u.port || (u.protocol === "wss:" ? 443 : 80));
  try {
    const conn = await Deno.connect({ hostname: u.hostname, port });
    conn.close();
    return false;
  } catch (err) {
    return err instanceof Deno.errors.ConnectionRefused;
  }
}

interface Session {
  socket: WebSocket;
  /** Streams whose replay finished: their new frames are sent as they are spooled. */
  live: Set<StreamName>;
  /** Streams whose first ack (the server's cursor) arrived. */
  acked: Set<StreamName>;
  heartbeat: ReturnType<typeof setInterval> | null;
  closed: Promise<void>;
  /** Send times of the hello and heartbeats the server has not answered yet, oldest first. */
  unanswered: number[];
  opened: boolean;
  /** The newest seq sent, and acknowledged, of each stream on this connection. */
  sent: Map<StreamName, number>;
  ackedSeq: Map<StreamName, number>;
  /** Streams whose sending waits for acks (too many frames in flight). */
  held: Set<StreamName>;
  /** Ends this session's life at once (the close handshake of a dead socket may never end). */
  end(): void;
}

/** What the agent holds that the server has not stored yet (sent in heartbeats). */
export interface Backlog {
  /** Data frames spooled and not yet acknowledged. */
  frames: number;
  /** Seconds since the oldest of them was spooled (0 when none). */
  oldest_s: number;
}

/** Keeps one WebSocket to the server open while started. */
export class Connection {
  #options: ConnectionOptions;
  #session: Session | null = null;
  #stopped = true;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  #failures = 0;
  /** When frames not yet acknowledged were spooled, oldest first: [seq, ms] per stream. */
  #spooledAt = new Map<StreamName, [number, number][]>();
  #startedAt: number;

  constructor(options: ConnectionOptions) {
    this.#options = options;
    this.#startedAt = this.#now();
    options.spool.onAppend((frame) => {
      this.#noteSpooled(frame);
      this.#sendLive(frame);
    });
  }

  /** What the server has not stored yet: frames, and the age of the oldest. */
  backlog(): Backlog {
    const stats = this.#options.spool.stats();
    let frames = 0;
    let oldest = Infinity;
    for (
      const [stream, s] of Object.entries(stats.streams) as [
        StreamName,
        typeof stats.streams[StreamName],
      ][]
    ) {
      const behind = Math.max(0, s.newest - s.acked);
      frames += behind;
      if (behind === 0) continue;
      const times = this.#spooledAt.get(stream);
      // Spooled before this agent started: at least as old as its start.
      const first = times?.find(([seq]) => seq > s.acked);
      oldest = Math.min(oldest, first ? first[1] : this.#startedAt);
    }
    return {
      frames,
      oldest_s: frames === 0 ? 0 : Math.max(0, (this.#now() - oldest) / 1000),
    };
  }

  #noteSpooled(frame: WireDataFrame): void {
    let times = this.#spooledAt.get(frame.stream);
    if (!times) this.#spooledAt.set(frame.stream, times = []);
    // Bounded: only the oldest times matter, and a long outage keeps the first ones.
    if (times.length < 100_000) times.push([frame.seq, this.#now()]);
  }

  #forgetSpooled(stream: StreamName, upTo: number): void {
    const times = this.#spooledAt.get(stream);
    if (!times) return;
    let drop = 0;
    while (drop < times.length && times[drop][0] <= upTo) drop++;
    if (drop) times.splice(0, drop);
  }

  #inFlight(session: Session, stream: StreamName): number {
    return (session.sent.get(stream) ?? 0) - (session.ackedSeq.get(stream) ?? 0);
  }

  /** True while a socket to the server is open. */
  get connected(): boolean {
    return this.#session?.socket.readyState === WebSocket.OPEN;
  }

  /** Starts connecting; idempotent. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#loop = this.#run();
  }

  /** Closes the socket and stops reconnecting; idempotent. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    const session = this.#session;
    if (session && session.socket.readyState <= WebSocket.OPEN) session.socket.close(1000);
    // A server that never answers the close handshake must not hold the agent's shutdown.
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.#loop, new Promise((resolve) => timer = setTimeout(resolve, 2000))]);
    clearTimeout(timer);
  }

  async #run(): Promise<void> {
    const backoff = this.#options.backoff ?? ((n: number) => backoffDelay(n, Math.random));
    while (!this.#stopped) {
      const opened = await this.#connectOnce();
      if (this.#stopped) break;
      this.#failures = opened ? 0 : this.#failures + 1;
      const delay = Math.min(backoff(this.#failures), this.#options.maxBackoffMs ?? Infinity);
      this.#options.log.warn(opened ? "disconnected from the server" : "cannot connect", {
        url: this.#options.url,
        retry_in_s: delay / 1000,
      });
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = null;
    }
  }

  /** One socket's life; resolves when it closes, with whether the server acknowledged us. */
  async #connectOnce(): Promise<boolean> {
    let socket: WebSocket;
    try {
      socket = openWebSocket(this.#options.url, {
        Authorization: `Bearer ${this.#options.token}`,
      });
    } catch (err) {
      this.#options.log.error("cannot open a WebSocket", { error: String(err) });
      return false;
    }
    let closedResolve!: () => void;
    let ended = false;
    const session: Session = {
      socket,
      live: new Set(),
      acked: new Set(),
      heartbeat: null,
      closed: new Promise((resolve) => closedResolve = resolve),
      unanswered: [],
      opened: false,
      sent: new Map(),
      ackedSeq: new Map(),
      held: new Set(),
      end: () => {
        ended = true;
        clearTimeout(opening);
        if (session.heartbeat !== null) clearInterval(session.heartbeat);
        session.heartbeat = null;
        session.live.clear();
        closedResolve();
      },
    };
    this.#session = session;
    socket.onopen = () => {
      clearTimeout(opening);
      if (!ended) this.#onOpen(session);
    };
    socket.onmessage = (event) => {
      if (this.#session === session) this.#onMessage(session, event.data);
    };
    socket.onerror = () => {}; // the close that follows says enough
    socket.onclose = () => session.end();
    const opening = setTimeout(
      () => this.#giveUp(session, "the server did not complete the opening handshake"),
      this.#answerTimeoutMs(),
    );
    if (this.#stopped) socket.close(1000);
    const probeAt = this.#now();
    await session.closed;
    if (this.#session === session) this.#session = null;
    if (!session.opened && !this.#stopped) await this.#probeServer(probeAt);
    return session.acked.size > 0;
  }

  #answerTimeoutMs(): number {
    return this.#options.answerTimeoutMs ??
      ANSWER_TIMEOUT_HEARTBEATS * this.#options.heartbeatMs;
  }

  /** Gives a silent connection up: closes it (best effort) and ends its session now. */
  #giveUp(session: Session, why: string): void {
    this.#options.log.warn("giving up a silent connection", {
      url: this.#options.url,
      reason: why,
    });
    try {
      session.socket.close(4002, "no answer");
    } catch {
      // already closed
    }
    session.end();
  }

  #now(): number {
    return (this.#options.monotonic ?? (() => performance.now()))();
  }

  /**
   * A connection that never opened: if nothing listens at the server's address, the server
   * is down and cannot requeue anything, so the lease holds (from before this attempt).
   */
  async #probeServer(startedAt: number): Promise<void> {
    if (!this.#options.onLease) return;
    const refuses = this.#options.serverRefuses ?? (() => connectionRefused(this.#options.url));
    try {
      if (await refuses()) this.#options.onLease(startedAt);
    } catch {
      // no proof either way: the lease keeps running down
    }
  }

  async #onOpen(session: Session): Promise<void> {
    session.opened = true;
    try {
      const hello = await this.#options.hello();
      if (!this.#sendAnswered(session, hello)) return;
      this.#options.log.info("connected", {
        url: this.#options.url,
        running: hello.running.length,
      });
      session.heartbeat = setInterval(
        () => this.#sendHeartbeat(session),
        this.#options.heartbeatMs,
      );
    } catch (err) {
      this.#options.log.error("cannot send hello", { error: String(err) });
      session.socket.close(1011);
    }
  }

  async #sendHeartbeat(session: Session): Promise<void> {
    const oldest = session.unanswered[0];
    if (oldest !== undefined && this.#now() - oldest > this.#answerTimeoutMs()) {
      this.#giveUp(
        session,
        `no answer to a frame sent ${Math.round((this.#now() - oldest) / 1000)} s ago`,
      );
      return;
    }
    try {
      this.#sendAnswered(session, await this.#options.heartbeat());
    } catch (err) {
      this.#options.log.error("cannot build a heartbeat", { error: String(err) });
    }
  }

  #onMessage(session: Session, data: unknown): void {
    let frame: ServerFrame;
    try {
      const parsed = serverFrame.safeParse(JSON.parse(String(data)));
      if (!parsed.success) {
        this.#options.log.warn("ignoring an invalid frame from the server", {
          error: parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "),
          frame: String(data).slice(0, 200),
        });
        return;
      }
      frame = parsed.data;
    } catch {
      this.#options.log.warn("ignoring a frame from the server that is not JSON", {
        frame: String(data).slice(0, 200),
      });
      return;
    }
    switch (frame.type) {
      case "ack":
        this.#onAck(session, frame.stream, frame.seq).catch((err) =>
          this.#options.log.error("cannot apply an ack", {
            stream: frame.stream,
            seq: frame.seq,
            error: String(err),
          })
        );
        return;
      case "error":
        this.#options.log.warn("the server refused a frame", { message: frame.message });
        return;
      case "lease": {
        // Replies come in order: this one answers the oldest frame not yet answered.
        const sentAt = session.unanswered.shift();
        if (sentAt !== undefined) this.#options.onLease?.(sentAt);
        return;
      }
      default:
        this.#options.onCommand(frame);
    }
  }

  async #onAck(session: Session, stream: StreamName, seq: number): Promise<void> {
    const spool = this.#options.spool;
    if (seq > (session.ackedSeq.get(stream) ?? 0)) session.ackedSeq.set(stream, seq);
    this.#forgetSpooled(stream, seq);
    if (session.acked.has(stream)) {
      await spool.ack(stream, seq);
      // Held back while the server was behind: send on from the spool, acks permitting.
      if (session.held.has(stream) && this.#inFlight(session, stream) < MAX_IN_FLIGHT / 2) {
        session.held.delete(stream);
        await this.#replay(session, stream, session.sent.get(stream) ?? seq);
      }
      return;
    }
    // The first ack of a connection is the server's cursor: replay what follows it.
    session.acked.add(stream);
    session.sent.set(stream, seq);
    if (seq > spool.newest(stream)) await spool.rebase(stream, seq);
    await spool.ack(stream, seq);
    await this.#replay(session, stream, seq);
  }

  /** Sends the spooled frames after `after`, then marks the stream live, without gap or repeat. */
  async #replay(session: Session, stream: StreamName, after: number): Promise<void> {
    const spool = this.#options.spool;
    let cursor = after;
    let sent = 0;
    while (session.socket.readyState === WebSocket.OPEN) {
      // Checked and set with no await in between, so a frame spooled meanwhile is either
      // read by this loop or sent live by #sendLive, never both.
      if (cursor >= spool.newest(stream)) {
        session.live.add(stream);
        if (sent > 0) this.#options.log.info("replayed spooled frames", { stream, frames: sent });
        return;
      }
      const { frames, upTo } = await spool.readAfter(stream, cursor, REPLAY_BATCH);
      for (const frame of frames) {
        // A server that is behind gets no more than MAX_IN_FLIGHT frames ahead of its acks.
        while (
          session.socket.readyState === WebSocket.OPEN &&
          this.#inFlight(session, stream) >= MAX_IN_FLIGHT
        ) {
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        if (!this.#sendData(session, frame)) return;
      }
      sent += frames.length;
      cursor = upTo;
      while (
        session.socket.readyState === WebSocket.OPEN &&
        session.socket.bufferedAmount > REPLAY_HIGH_WATER
      ) {
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
  }

  /** Sends a hello or heartbeat, noting when: the server's `lease` reply renews from then. */
  #sendAnswered(session: Session, frame: HelloFrame | HeartbeatFrame): boolean {
    const at = this.#now();
    if (!this.#send(session, frame)) return false;
    session.unanswered.push(at);
    return true;
  }

  #sendLive(frame: WireDataFrame): void {
    const session = this.#session;
    if (!session || !session.live.has(frame.stream)) return;
    if (this.#inFlight(session, frame.stream) >= MAX_IN_FLIGHT) {
      // The server is behind: this frame and the next wait in the spool; the ack that makes
      // room replays them (#onAck).
      session.live.delete(frame.stream);
      session.held.add(frame.stream);
      return;
    }
    this.#sendData(session, frame);
  }

  #sendData(session: Session, frame: WireDataFrame): boolean {
    if (!this.#send(session, frame)) return false;
    if (frame.seq > (session.sent.get(frame.stream) ?? 0)) {
      session.sent.set(frame.stream, frame.seq);
    }
    return true;
  }

  #send(session: Session, frame: unknown): boolean {
    if (session.socket.readyState !== WebSocket.OPEN) return false;
    try {
      session.socket.send(JSON.stringify(frame));
      return true;
    } catch (err) {
      this.#options.log.warn("cannot send a frame", { error: String(err) });
      return false;
    }
  }
}
