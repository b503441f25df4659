/**
 * A load on the real server process: simulated agents (WebSocket clients that speak the agent
 * wire: hello, heartbeats, a job's RUNNING, then metrics and logs frames at a set rate), SSE
 * readers of the runs' metrics streams and, optionally, SSE clients that never read.
 *
 * Measured: ingest-to-commit (a data frame sent → its ack, which the server sends once the
 * frame is committed), SSE lag (a point's wall time → its arrival at a reader), the server's
 * RSS and WAL size, and nodes seen OFFLINE while their agent was connected. Each agent keeps
 * a ledger of what it sent, compared with the store at the end.
 *
 * Used by `tests/load_test.ts` (a short tier) and `bench/load.ts` (`deno task bench:load`).
 */
import { openWebSocket } from "../lib/websocket.ts";
import type { ServerFrame } from "../protocol/agent.ts";
import { api, startServerProcess } from "./_processes.ts";
import { heartbeatFrame } from "./_fake_agent.ts";
import { Ledger, linesLedger, pointRecord, storedLedgers } from "./_ledger.ts";

export interface LoadOptions {
  agents: number;
  /** Points a second from each agent. */
  pointsPerAgent: number;
  /** Log lines a second from all agents together. */
  linesPerS: number;
  /** SSE readers of the runs' metrics streams (spread over the runs). */
  sseReaders: number;
  /** SSE clients that send their request and never read. */
  silentSse: number;
  /** The agents' heartbeat interval. */
  heartbeatS: number;
  /** The server's node_timeout_s. */
  nodeTimeoutS: number;
}

/** Percentiles of a sample, in its unit. */
export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = Float64Array.from(xs).sort();
  return s[Math.min(s.length - 1, Math.floor(s.length * p))];
}

/**
 * Data frames an agent has sent and not had acknowledged, at most (as `agent/connection.ts`
 * keeps them): later frames wait in its outbox, as in a real agent's spool.
 */
const MAX_IN_FLIGHT = 16;

/** How often an agent sends a metrics frame and a logs frame: as the SDK and the agent do. */
const METRICS_EVERY_MS = 200;
const LOGS_EVERY_MS = 250;
const KEYS = ["loss", "acc", "lr", "grad_norm"];

/** One simulated agent: a node with one CPU slot, which runs the one job it is sent. */
class SimAgent {
  readonly nodeId: string;
  ref: { job_id: string; attempt: number; run_id: string } | null = null;
  points = new Ledger();
  lines: string[] = [];
  /** Times (performance.now) data frames not yet acked were made, by seq (sent or not). */
  #pending = new Map<number, number>();
  #latencies: number[] = [];
  #seq = 0;
  /** Frames made and not yet sent: the server is behind (see MAX_IN_FLIGHT). */
  #outbox: { seq: number; text: string }[] = [];
  #sent = 0;
  #acked = 0;
  #counter = 0;
  #lineCarry = 0;
  #socket!: WebSocket;
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  closed = false;

  constructor(nodeId: string) {
    this.nodeId = nodeId;
  }

  async connect(base: string, token: string, heartbeatS: number): Promise<void> {
    const socket = openWebSocket(`${base.replace("http", "ws")}/api/agent/ws`, {
      authorization: `Bearer ${token}`,
    });
    socket.onmessage = (e) => this.#onFrame(JSON.parse(e.data));
    socket.onclose = () => {
      this.closed = true;
      clearInterval(this.#heartbeat);
    };
    await new Promise<void>((resolve, reject) => {
      socket.onopen = () => resolve();
      socket.onerror = (e) => reject(new Error(`WebSocket: ${(e as ErrorEvent).message}`));
    });
    this.#socket = socket;
    this.#send({
      type: "hello",
      node_id: this.nodeId,
      hostname: this.nodeId,
      agent_version: "load",
      gpus: [],
      fake_gpus: true,
      cpu_count: 1,
      memory_mb: 1000,
      disk_free_mb: 100_000,
      labels: {},
      cpu_slots: 1,
      avoid_foreign_gpus: false,
      running: [],
      fence_after_s: 60,
    });
    this.#heartbeat = setInterval(() => {
      // With what it holds unacknowledged, as the agent reports it.
      const oldest = this.#pending.values().next().value;
      this.#send({
        ...heartbeatFrame(this.ref ? [this.ref] : []),
        backlog: {
          frames: this.#pending.size,
          oldest_s: oldest === undefined ? 0 : (performance.now() - oldest) / 1000,
        },
      });
    }, heartbeatS * 1000);
  }

  #send(frame: unknown): void {
    if (this.#socket.readyState === WebSocket.OPEN) this.#socket.send(JSON.stringify(frame));
  }

  #data(frame: Record<string, unknown>): void {
    const seq = ++this.#seq;
    this.#pending.set(seq, performance.now());
    this.#outbox.push({ seq, text: JSON.stringify({ ...frame, stream: "data", seq }) });
    this.#drain();
  }

  /** Sends what waits, while fewer than MAX_IN_FLIGHT frames are unacknowledged. */
  #drain(): void {
    while (this.#outbox.length > 0 && this.#sent - this.#acked < MAX_IN_FLIGHT) {
      const { seq, text } = this.#outbox.shift()!;
      if (this.#socket.readyState !== WebSocket.OPEN) return;
      this.#socket.send(text);
      this.#sent = seq;
    }
  }

  #onFrame(frame: ServerFrame): void {
    if (frame.type === "ack" && frame.stream === "data") {
      const now = performance.now();
      for (const [seq, at] of this.#pending) {
        if (seq > frame.seq) break;
        this.#latencies.push(now - at);
        this.#pending.delete(seq);
      }
      this.#acked = Math.max(this.#acked, frame.seq);
      this.#drain();
    } else if (frame.type === "dispatch" && !this.ref) {
      this.ref = { job_id: frame.job.job_id, attempt: frame.job.attempt, run_id: frame.job.run_id };
      this.#data({
        type: "job_state",
        ...this.ref,
        state: "RUNNING",
        pid: 1,
        ts: Date.now() / 1000,
      });
    }
  }

  /** Sends `points` points in one metrics frame. */
  sendPoints(points: number): void {
    if (!this.ref || this.closed) return;
    const wall = Date.now() / 1000;
    if (points > 0) {
      const batch = [];
      for (let i = 0; i < points; i++, this.#counter++) {
        const key = KEYS[this.#counter % KEYS.length];
        const step = Math.floor(this.#counter / KEYS.length);
        const value = (this.#counter % 1000) / 8;
        batch.push({ key, step, value, wall_time: wall });
        this.points.add(pointRecord(this.ref.run_id, key, step, value));
      }
      this.#data({ type: "metrics", ...this.ref, points: batch });
    }
  }

  /** Sends the lines now due (`lines` more, fractions carried) in one logs frame. */
  sendLines(lines: number): void {
    if (!this.ref || this.closed) return;
    this.#lineCarry += lines;
    const n = Math.floor(this.#lineCarry);
    this.#lineCarry -= n;
    if (n > 0) {
      const out = [];
      for (let i = 0; i < n; i++) {
        const text = `${this.nodeId} line ${this.lines.length + 1} ${"·".repeat(40)}`;
        this.lines.push(text);
        out.push({ seq: this.lines.length, ts: new Date().toISOString(), stream: "stdout", text });
      }
      this.#data({ type: "logs", ...this.ref, lines: out });
    }
  }

  /**
   * Latencies measured since the last call (ms); with `pending`, also the age of each frame
   * still unacked (a lower bound of its latency, so a backlog shows).
   */
  takeLatencies(pending = false): number[] {
    const out = this.#latencies;
    this.#latencies = [];
    if (pending) {
      const now = performance.now();
      for (const at of this.#pending.values()) out.push(now - at);
    }
    return out;
  }

  get unacked(): number {
    return this.#pending.size;
  }

  close(): void {
    clearInterval(this.#heartbeat);
    try {
      this.#socket.close();
    } catch {
      // already closed
    }
  }
}

/** A reader of one run's metrics stream that counts points and their lag. */
async function sseReader(url: string, token: string, lags: number[]) {
  const abort = new AbortController();
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}` },
    signal: abort.signal,
  });
  if (res.status !== 200) throw new Error(`SSE ${url}: ${res.status} ${await res.text()}`);
  const state = { points: 0, ended: false };
  const done = (async () => {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of res.body!) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf("\n\n")) >= 0) {
          const message = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const data = message.split("\n").find((l) => l.startsWith("data: "));
          if (!data) continue;
          const now = Date.now() / 1000;
          const body = JSON.parse(data.slice(6));
          for (const p of body.points ?? []) {
            state.points++;
            lags.push((now - p.wall_time) * 1000);
          }
        }
      }
    } catch {
      // aborted
    }
    state.ended = true;
  })();
  return {
    state,
    async close() {
      abort.abort();
      await done;
    },
  };
}

/** An SSE client that sends its request and never reads a byte. */
async function silentSse(port: number, path: string, token: string): Promise<Deno.TcpConn> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n\r\n`,
    ),
  );
  return conn;
}

/** The process's resident set in MB; NaN once it is gone. */
function rssMb(pid: number): number {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024;
  } catch {
    return NaN;
  }
}

function fileMb(path: string): number {
  try {
    return Deno.statSync(path).size / (1024 * 1024);
  } catch {
    return 0;
  }
}

/** What one phase of the load measured. */
export interface PhaseResult {
  seconds: number;
  agents: number;
  /** Points a second asked for, and sent. */
  targetPointsPerS: number;
  sentPointsPerS: number;
  sentLinesPerS: number;
  ingestP50Ms: number;
  ingestP99Ms: number;
  sseP99Ms: number;
  frames: number;
  /** Frames still unacked when the phase was measured (a server that fell behind). */
  unacked: number;
}

export interface LoadCluster {
  agents: SimAgent[];
  home: string;
  /** The server process's pid and address, and the admin token. */
  serverPid: number;
  url: string;
  adminToken: string;
  /** Runs the load for `seconds` at `pointsPerAgent` each (and the configured lines). */
  phase(seconds: number, pointsPerAgent: number): Promise<PhaseResult>;
  /** Waits for every ack, then compares each agent's ledger with the store. */
  verify(): Promise<
    { agents: number; lost: string[]; points: number; lines: number; unacked: number }
  >;
  stats(): {
    rssMaxMb: number;
    rssNowMb: number;
    walMaxMb: number;
    falseOffline: number;
    /** Per SSE reader: the points it received, and the points its run was sent. */
    sse: { received: number; sent: number }[];
  };
  stop(): Promise<void>;
}

/** Starts a server process, connects the agents and readers, and waits until jobs run. */
export async function startLoad(opts: LoadOptions): Promise<LoadCluster> {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-load-" });
  await Deno.mkdir(`${home}/server`, { recursive: true });
  await Deno.writeTextFile(
    `${home}/server/server.yaml`,
    `node_timeout_s: ${opts.nodeTimeoutS}\nmax_sse_streams: 2000\nmax_sse_streams_per_token: 2000\n` +
      `max_agent_connections: ${opts.agents + 8}\n`,
  );
  const server = await startServerProcess(`${home}/server`);
  const pid = server.proc.child.pid;
  const dbPath = `${home}/server/gpuctl.db`;
  const call = api(server.url, server.adminToken);
  const agents: SimAgent[] = [];
  const readers: Awaited<ReturnType<typeof sseReader>>[] = [];
  const silent: Deno.TcpConn[] = [];
  const sseLags: number[] = [];
  let rssMaxMb = rssMb(pid);
  let walMaxMb = 0;
  let falseOffline = 0;
  let sampling = true;
  let samplerError: unknown = null;
  const sampler = (async () => {
    const offline = new Set<string>();
    while (sampling) {
      const rss = rssMb(pid);
      if (Number.isNaN(rss)) {
        throw new Error(`the server exited:\n${server.proc.output().slice(-3000)}`);
      }
      rssMaxMb = Math.max(rssMaxMb, rss);
      walMaxMb = Math.max(walMaxMb, fileMb(`${dbPath}-wal`));
      const nodes = await call("GET", "/api/nodes").catch(() => null);
      for (const n of nodes?.json?.items ?? []) {
        const agent = agents.find((a) => a.nodeId === n.id);
        if (n.status === "OFFLINE" && agent && !agent.closed && !offline.has(n.id)) {
          offline.add(n.id);
          falseOffline++;
        }
        if (n.status === "ONLINE") offline.delete(n.id);
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
  })().catch((err) => {
    samplerError = err; // reported by phase() and verify(), not left unhandled
  });
  const stop = async () => {
    sampling = false;
    await sampler;
    for (const r of readers) await r.close();
    for (const c of silent) {
      try {
        c.close();
      } catch {
        // dropped by the server already
      }
    }
    for (const a of agents) a.close();
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  };
  try {
    for (let i = 0; i < opts.agents; i++) {
      const a = new SimAgent(`load-${String(i + 1).padStart(3, "0")}`);
      await a.connect(server.url, server.agentToken, opts.heartbeatS);
      agents.push(a);
    }
    for (let i = 0; i < opts.agents; i++) {
      const res = await call("POST", "/api/jobs", {
        name: `load-${i + 1}`,
        command: ["true"],
        working_dir: "/tmp",
        gpus: 0,
      });
      if (res.status !== 201) throw new Error(`submit: ${res.status} ${res.text}`);
    }
    const deadline = Date.now() + 60_000;
    while (agents.some((a) => !a.ref)) {
      if (Date.now() > deadline) throw new Error("not every simulated agent got its job");
      await new Promise((r) => setTimeout(r, 50));
    }
    for (let i = 0; i < opts.sseReaders; i++) {
      const run = agents[i % agents.length].ref!.run_id;
      readers.push(
        await sseReader(
          `${server.url}/api/runs/${run}/metrics/stream?after=0`,
          server.adminToken,
          sseLags,
        ),
      );
    }
    for (let i = 0; i < opts.silentSse; i++) {
      const run = agents[i % agents.length].ref!.run_id;
      silent.push(
        await silentSse(server.port, `/api/runs/${run}/metrics/stream?after=0`, server.adminToken),
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    agents,
    home,
    serverPid: pid,
    url: server.url,
    adminToken: server.adminToken,
    async phase(seconds, pointsPerAgent) {
      if (samplerError) throw samplerError;
      for (const a of agents) a.takeLatencies();
      sseLags.length = 0;
      const before = agents.reduce((n, a) => n + a.points.count, 0);
      const linesBefore = agents.reduce((n, a) => n + a.lines.length, 0);
      const t0 = performance.now();
      const end = t0 + seconds * 1000;
      // Sends are paced against the clock, so a late timer is caught up, not dropped.
      let metricsSent = 0;
      let logsSent = 0;
      let carry = 0;
      const linesPerLogFrame = (opts.linesPerS / opts.agents) * (LOGS_EVERY_MS / 1000);
      while (performance.now() < end) {
        const now = performance.now() - t0;
        for (; metricsSent < Math.floor(now / METRICS_EVERY_MS) + 1; metricsSent++) {
          carry += (pointsPerAgent * METRICS_EVERY_MS) / 1000;
          const points = Math.floor(carry);
          carry -= points;
          for (const a of agents) a.sendPoints(points);
        }
        for (; logsSent < Math.floor(now / LOGS_EVERY_MS) + 1; logsSent++) {
          for (const a of agents) a.sendLines(linesPerLogFrame);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      const elapsed = (performance.now() - t0) / 1000;
      // Let this phase's last frames be acked (bounded: an overloaded server may not catch up).
      for (let i = 0; i < 300 && agents.some((a) => a.unacked > 0); i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const latencies = agents.flatMap((a) => a.takeLatencies(true));
      const sent = agents.reduce((n, a) => n + a.points.count, 0) - before;
      const lines = agents.reduce((n, a) => n + a.lines.length, 0) - linesBefore;
      return {
        seconds: elapsed,
        agents: agents.length,
        targetPointsPerS: pointsPerAgent * agents.length,
        sentPointsPerS: sent / elapsed,
        sentLinesPerS: lines / elapsed,
        ingestP50Ms: percentile(latencies, 0.5),
        ingestP99Ms: percentile(latencies, 0.99),
        sseP99Ms: percentile(sseLags, 0.99),
        frames: latencies.length,
        unacked: agents.reduce((n, a) => n + a.unacked, 0),
      };
    },
    async verify() {
      if (samplerError) throw samplerError;
      const deadline = Date.now() + 60_000;
      while (agents.some((a) => a.unacked > 0) && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const lost: string[] = [];
      for (const a of agents) {
        const run = a.ref!.run_id;
        const stored = storedLedgers(dbPath, [run]);
        if (String(stored.points) !== String(a.points)) {
          lost.push(`${a.nodeId} points: sent ${a.points}, stored ${stored.points}`);
        }
        const want = linesLedger(run, a.lines);
        if (String(stored.lines) !== String(want)) {
          lost.push(`${a.nodeId} lines: sent ${want}, stored ${stored.lines}`);
        }
      }
      return {
        agents: agents.length,
        lost,
        points: agents.reduce((n, a) => n + a.points.count, 0),
        lines: agents.reduce((n, a) => n + a.lines.length, 0),
        unacked: agents.reduce((n, a) => n + a.unacked, 0),
      };
    },
    stats() {
      return {
        rssMaxMb,
        rssNowMb: rssMb(pid),
        walMaxMb,
        falseOffline,
        sse: readers.map((r, i) => ({
          received: r.state.points,
          sent: agents[i % agents.length].points.count,
        })),
      };
    },
    stop,
  };
}
