/**
 * A fake gpuctl server for agent tests: it speaks the agent WebSocket protocol the way the
 * real gateway does (hello → one ack per stream with its cursor; data frames applied once,
 * when their seq is above the cursor, then acked) and records everything it received.
 */
import {
  type AgentFrame,
  agentFrame,
  type DataFrame,
  type HeartbeatFrame,
  type HelloFrame,
  type ServerFrame,
  type StreamName,
  STREAMS,
} from "../protocol/agent.ts";

export class FakeServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** The stored cursor per stream. */
  readonly cursors: Record<StreamName, number> = { data: 0, sys: 0 };
  /** Data frames applied (seq above the cursor), in the order applied. */
  readonly applied: DataFrame[] = [];
  /** Data frames received at or below the cursor (replays of what was already applied). */
  readonly ignored: DataFrame[] = [];
  readonly hellos: HelloFrame[] = [];
  readonly heartbeats: HeartbeatFrame[] = [];
  /** Frames that failed `agentFrame` validation, with the reason. */
  readonly invalid: string[] = [];
  /** The Authorization header of each WebSocket request. */
  readonly authorizations: (string | null)[] = [];
  /** When false, data frames are applied but their acks are not sent (as if lost on the way). */
  sendAcks = true;
  /** When false, hello and heartbeats get no `lease` reply (a server that does not hear them). */
  sendLeases = true;
  /** When true, WebSocket requests are refused with 503. */
  refuse = false;
  #socket: WebSocket | null = null;
  #abort = new AbortController();
  #server: Deno.HttpServer<Deno.NetAddr>;

  private constructor() {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, signal: this.#abort.signal, onListen: () => {} },
      (req) => this.#handle(req),
    );
    this.url = `http://127.0.0.1:${this.#server.addr.port}`;
  }

  static start(): FakeServer {
    return new FakeServer();
  }

  get connected(): boolean {
    return this.#socket?.readyState === WebSocket.OPEN;
  }

  /** Sends a frame to the connected agent. */
  send(frame: ServerFrame | Record<string, unknown>): void {
    if (!this.#socket) throw new Error("Cannot send: no agent is connected");
    this.#socket.send(JSON.stringify(frame));
  }

  /** Closes the agent's socket from the server side. */
  async dropConnection(): Promise<void> {
    const socket = this.#socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise((resolve) => socket.addEventListener("close", resolve));
    socket.close(1001, "test drops the connection");
    await closed;
  }

  /** Applied frames of one type (and optionally one run), in order. */
  of<T extends DataFrame["type"]>(type: T, runId?: string): Extract<DataFrame, { type: T }>[] {
    return this.applied.filter((f) =>
      f.type === type && (runId === undefined || ("run_id" in f && f.run_id === runId))
    ) as Extract<DataFrame, { type: T }>[];
  }

  async stop(): Promise<void> {
    if (this.#socket && this.#socket.readyState <= WebSocket.OPEN) this.#socket.close();
    this.#abort.abort();
    await this.#server.finished;
  }

  #handle(req: Request): Response {
    if (new URL(req.url).pathname !== "/api/agent/ws") {
      return new Response("not found", { status: 404 });
    }
    this.authorizations.push(req.headers.get("authorization"));
    if (this.refuse) return new Response("refused by the test", { status: 503 });
    const { socket, response } = Deno.upgradeWebSocket(req);
    socket.onmessage = (event) => this.#onFrame(socket, String(event.data));
    socket.onopen = () => this.#socket = socket;
    return response;
  }

  #onFrame(socket: WebSocket, text: string): void {
    const parsed = agentFrame.safeParse(JSON.parse(text));
    if (!parsed.success) {
      this.invalid.push(`${parsed.error.message}: ${text.slice(0, 500)}`);
      return;
    }
    const frame: AgentFrame = parsed.data;
    if (frame.type === "hello") {
      this.hellos.push(frame);
      for (const stream of STREAMS) {
        socket.send(JSON.stringify({ type: "ack", stream, seq: this.cursors[stream] }));
      }
      if (this.sendLeases) socket.send(JSON.stringify({ type: "lease" }));
      return;
    }
    if (frame.type === "heartbeat") {
      this.heartbeats.push(frame);
      if (this.sendLeases) socket.send(JSON.stringify({ type: "lease" }));
      return;
    }
    if (frame.seq <= this.cursors[frame.stream]) {
      this.ignored.push(frame);
    } else {
      this.cursors[frame.stream] = frame.seq;
      this.applied.push(frame);
    }
    if (this.sendAcks) {
      socket.send(JSON.stringify({ type: "ack", stream: frame.stream, seq: frame.seq }));
    }
  }
}

/** Polls until `fn` returns a truthy value, or fails with `what`. */
export async function eventually<T>(
  what: string,
  fn: () => T | Promise<T>,
  ms = 10_000,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await fn();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`Timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
