/** A scripted agent for gateway tests: speaks the wire protocol over a real WebSocket. */
import { openWebSocket } from "../lib/websocket.ts";
import type { AgentFrame, HelloFrame, ServerFrame } from "../protocol/agent.ts";
import { AgentGateway, type GatewayOptions } from "../server/gateway/gateway.ts";
import { SchedulerLoop } from "../server/scheduler/loop.ts";
import { createHarness, type Harness } from "./_harness.ts";

export interface GatewayHarness extends Harness {
  gateway: AgentGateway;
  scheduler: SchedulerLoop;
  base: string;
  stop(): Promise<void>;
}

/** A fake clock for the gateway: its monotonic ms and the server's wall clock move together. */
export class FakeClock {
  ms = 0;
  readonly base = Date.parse("2026-01-01T12:00:00Z");
  monotonic = (): number => this.ms;
  now = (): Date => new Date(this.base + this.ms);
}

/** A harness whose app also runs the agent gateway, served on 127.0.0.1. */
export async function createGatewayHarness(
  options: GatewayOptions = {},
  clock?: FakeClock,
): Promise<GatewayHarness> {
  const h = await createHarness(clock ? { now: clock.now } : {});
  const gateway = new AgentGateway(h.ctx, {
    ...(clock ? { monotonic: clock.monotonic } : {}),
    ...options,
  });
  h.ctx.agents = gateway;
  gateway.start();
  const scheduler = new SchedulerLoop(h.ctx, gateway, { intervalMs: 200 });
  scheduler.start();
  const abort = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: abort.signal, onListen: () => {} },
    h.app.fetch,
  );
  return {
    ...h,
    gateway,
    scheduler,
    base: `http://127.0.0.1:${server.addr.port}`,
    async stop() {
      scheduler.stop();
      gateway.stop();
      abort.abort();
      await server.finished;
      await h.close();
    },
  };
}

/** A heartbeat of a quiet node running `running` (each as pid 1). */
export function heartbeatFrame(
  running: { job_id: string; attempt: number; run_id: string }[] = [],
  backlog?: { frames: number; oldest_s: number },
): AgentFrame {
  return {
    type: "heartbeat",
    ts: Date.now() / 1000,
    gpus: [],
    cpu_pct: 1,
    mem_used_mb: 100,
    disk_free_mb: 100_000,
    foreign: [],
    running: running.map((r) => ({ ...r, pid: 1, state: "RUNNING" })),
    ...(backlog ? { backlog } : {}),
  };
}

export class FakeAgent {
  received: ServerFrame[] = [];
  /** Resolves with the close code once the connection is closed (by either side). */
  closed!: Promise<number>;
  #socket!: WebSocket;
  #seq = { data: 0, sys: 0 };

  static async connect(base: string, token: string): Promise<FakeAgent> {
    const agent = new FakeAgent();
    await agent.open(base, token);
    return agent;
  }

  async open(base: string, token: string): Promise<void> {
    const socket = openWebSocket(`${base.replace("http", "ws")}/api/agent/ws`, {
      authorization: `Bearer ${token}`,
    });
    socket.onmessage = (e) => this.received.push(JSON.parse(e.data));
    this.closed = new Promise((resolve) =>
      socket.addEventListener("close", (e) => resolve(e.code), { once: true })
    );
    await new Promise<void>((resolve, reject) => {
      socket.onopen = () => resolve();
      socket.onerror = (e) => reject(new Error(`WebSocket failed: ${(e as ErrorEvent).message}`));
    });
    this.#socket = socket;
  }

  send(frame: AgentFrame | Record<string, unknown>): void {
    this.#socket.send(JSON.stringify(frame));
  }

  /** Sends text as it is (a frame that is not JSON, say). */
  sendText(text: string): void {
    this.#socket.send(text);
  }

  hello(overrides: Partial<HelloFrame> = {}): void {
    this.send({
      type: "hello",
      node_id: "node-a",
      hostname: "node-a.test",
      agent_version: "test",
      gpus: [0, 1].map((i) => ({
        index: i,
        uuid: `GPU-${i}`,
        name: "Fake GPU",
        memory_total_mb: 1000,
        fake: true,
      })),
      fake_gpus: true,
      cpu_count: 4,
      memory_mb: 8000,
      disk_free_mb: 100_000,
      labels: {},
      cpu_slots: 2,
      avoid_foreign_gpus: false,
      running: [],
      fence_after_s: 10,
      ...overrides,
    });
  }

  heartbeat(
    running: { job_id: string; attempt: number; run_id: string }[] = [],
    backlog?: { frames: number; oldest_s: number },
  ): void {
    this.send(heartbeatFrame(running, backlog));
  }

  /** Sends a data frame with the next seq of its stream; returns the seq. */
  data(frame: Record<string, unknown>, stream: "data" | "sys" = "data", seq?: number): number {
    const s = seq ?? ++this.#seq[stream];
    this.send({ ...frame, stream, seq: s });
    return s;
  }

  /** Reports an attempt's process state (RUNNING, EXITED …) as a `job_state` data frame. */
  jobState(
    ref: { job_id: string; attempt: number; run_id: string },
    state: "PENDING" | "RUNNING" | "EXITED" | "DISPATCH_FAILED" | "CANCELLED" | "GONE",
    extra: Record<string, unknown> = {},
  ): number {
    return this.data({ type: "job_state", ...ref, state, ts: Date.now() / 1000, ...extra });
  }

  of<T extends ServerFrame["type"]>(type: T): Extract<ServerFrame, { type: T }>[] {
    return this.received.filter((f) => f.type === type) as Extract<ServerFrame, { type: T }>[];
  }

  async until(predicate: (a: FakeAgent) => boolean, ms = 5000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!predicate(this)) {
      if (Date.now() > deadline) {
        throw new Error(
          `condition not met in ${ms} ms; received ${JSON.stringify(this.received).slice(0, 2000)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  async close(): Promise<void> {
    if (this.#socket.readyState === WebSocket.CLOSED) return;
    const closed = new Promise((r) => this.#socket.addEventListener("close", r, { once: true }));
    this.#socket.close();
    await closed;
  }
}

/** Polls until `fn` returns a truthy value. */
export async function eventually<T>(fn: () => T | Promise<T>, ms = 5000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A fake agent (node-a) that said hello and was sent one job: the agent and the attempt. */
export async function agentWithJob(h: GatewayHarness, name = "job") {
  const agent = await FakeAgent.connect(h.base, h.tokens.agent);
  agent.hello();
  await agent.until((a) => a.of("ack").length === 2);
  const id = (await h.call("POST", "/api/jobs", {
    body: { name, command: ["true"], working_dir: "/w", gpus: 1 },
  })).json.id;
  await agent.until((a) => a.of("dispatch").length === 1);
  const ref = { job_id: id, attempt: 1, run_id: agent.of("dispatch")[0].job.run_id };
  return { agent, id, ref };
}
