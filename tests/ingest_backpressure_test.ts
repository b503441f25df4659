/**
 * A server that falls behind: its answers to the agent (the acks among them) are held at a gate
 * on the connection, as when the server could not commit. The real agent connection
 * (`agent/connection.ts` with its spool) sends no more than its window ahead of the acks and
 * holds the rest; its heartbeats say so, and `GET /api/status` and the Nodes page show how far
 * behind the server is, then, once the gate opens, that it caught up, with every point stored
 * once and in order. Nothing here depends on the machine's speed: the gate stays shut until
 * what is asserted has been seen.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import type { HeartbeatFrame, HelloFrame } from "../protocol/agent.ts";
import { Connection, MAX_IN_FLIGHT, type ServerCommand } from "../agent/connection.ts";
import { memoryLogger } from "../agent/log.ts";
import { Spool } from "../agent/spool.ts";
import { openWebSocket } from "../lib/websocket.ts";
import { BEHIND_NOTICE_S } from "../routes/nodes.tsx";
import { createGatewayHarness, eventually } from "./_fake_agent.ts";
import { consoleSession } from "./_harness.ts";

/**
 * A WebSocket relay between the agent and the server on 127.0.0.1. While shut, what the server
 * sends the agent waits (in order); what the agent sends always goes through, and is recorded.
 */
function gate(target: string) {
  let shut = false;
  const held: (() => void)[] = [];
  /** Every frame the agent sent, in order. */
  const sent: { type: string; backlog?: { frames: number } | null }[] = [];
  const sockets: WebSocket[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, (req) => {
    const authorization = req.headers.get("authorization") ?? "";
    const { socket: agent, response } = Deno.upgradeWebSocket(req);
    const upstream = openWebSocket(target, { Authorization: authorization });
    sockets.push(agent, upstream);
    const early: string[] = [];
    upstream.onopen = () => {
      for (const message of early.splice(0)) upstream.send(message);
    };
    agent.onmessage = (e) => {
      sent.push(JSON.parse(e.data));
      if (upstream.readyState === WebSocket.OPEN) upstream.send(e.data);
      else early.push(e.data);
    };
    upstream.onmessage = (e) => {
      const deliver = () => {
        if (agent.readyState === WebSocket.OPEN) agent.send(e.data);
      };
      if (shut) held.push(deliver);
      else deliver();
    };
    agent.onclose = () => upstream.close();
    upstream.onclose = () => agent.close();
    return response;
  });
  return {
    url: `ws://127.0.0.1:${server.addr.port}/api/agent/ws`,
    sent,
    shut() {
      shut = true;
    },
    open() {
      shut = false;
      for (const deliver of held.splice(0)) deliver();
    },
    async close() {
      for (const socket of sockets) {
        if (socket.readyState <= WebSocket.OPEN) socket.close();
      }
      await server.shutdown();
    },
  };
}

const NODE = "node-slow";
/** Frames the job logs while the gate is shut: many times the agent's window. */
const FRAMES = 200;

Deno.test({
  name:
    "a server behind on its acks: the agent holds frames back past its window, GET /api/status and the Nodes page say how far behind the server is, then that it caught up",
  fn: async () => {
    const h = await createGatewayHarness();
    const relay = gate(`${h.base.replace("http", "ws")}/api/agent/ws`);
    const dir = await Deno.makeTempDir({ prefix: "gpuctl-backpressure-" });
    const spool = await Spool.open(dir);
    const commands: ServerCommand[] = [];
    // deno-lint-ignore prefer-const -- the heartbeat reads it once connected
    let connection: Connection;
    const hello = (): HelloFrame => ({
      type: "hello",
      node_id: NODE,
      hostname: NODE,
      agent_version: "test",
      gpus: [],
      fake_gpus: true,
      cpu_count: 2,
      memory_mb: 1000,
      disk_free_mb: null,
      labels: {},
      cpu_slots: 1,
      avoid_foreign_gpus: false,
      running: [],
    });
    const heartbeat = (): HeartbeatFrame => ({
      type: "heartbeat",
      ts: Date.now() / 1000,
      gpus: [],
      cpu_pct: null,
      mem_used_mb: null,
      disk_free_mb: null,
      foreign: [],
      running: [],
      backlog: connection.backlog(),
    });
    connection = new Connection({
      url: relay.url,
      token: h.tokens.agent,
      spool,
      log: memoryLogger(),
      hello,
      heartbeat,
      onCommand: (c) => commands.push(c),
      heartbeatMs: 200,
      // Its answers wait at the gate with the acks: not a reason to reconnect.
      answerTimeoutMs: 600_000,
    });
    try {
      connection.start();
      await eventually(() => connection.connected);
      const id = (await h.call("POST", "/api/jobs", {
        body: { name: "slow", command: ["true"], working_dir: "/w", gpus: 0, node: NODE },
      })).json.id;
      const dispatch = await eventually(() => {
        const c = commands.find((c) => c.type === "dispatch");
        return c?.type === "dispatch" ? c : null;
      });
      const ref = {
        job_id: id,
        attempt: 1,
        run_id: dispatch!.job.run_id,
      };
      await spool.append({
        type: "job_state",
        stream: "data",
        ...ref,
        state: "RUNNING",
        pid: 1,
        ts: 1,
      });
      const status = async () => (await h.call("GET", "/api/status")).json.ingest;
      const cookie = await consoleSession(h, "read");
      const nodesPage = async () =>
        (await h.call("GET", "/nodes", { token: null, headers: { cookie } })).text;
      // The job's first frame is acked before the gate shuts.
      await eventually(() => connection.backlog().frames === 0);
      await eventually(async () => (await status()).unsent_frames === 0);
      assertStringIncludes(await nodesPage(), "up to date");

      // The server's acks now wait at the gate; the job logs FRAMES frames.
      relay.shut();
      for (let step = 1; step <= FRAMES; step++) {
        await spool.append({
          type: "metrics",
          stream: "data",
          ...ref,
          points: [{ key: "loss", step, value: 1 / step, wall_time: step }],
        });
      }
      // A heartbeat that counts all of them unacked comes after every frame the agent sent
      // for them (one socket keeps the order): by then it sent its window and no more.
      const { counted } = await eventually((): { counted: number } | null => {
        const i = relay.sent.findIndex((f) =>
          f.type === "heartbeat" && f.backlog?.frames === FRAMES
        );
        return i >= 0 ? { counted: i } : null;
      }, 30_000) as { counted: number };
      const metricsSent = () => relay.sent.filter((f) => f.type === "metrics").length;
      assertEquals(
        relay.sent.slice(0, counted).filter((f) => f.type === "metrics").length,
        MAX_IN_FLIGHT,
      );

      // The server says how far behind it is, from the agent's heartbeats, while the gate holds.
      const behind = await eventually(async () => {
        const s = await status();
        return s.nodes[0]?.unsent_frames === FRAMES && s.behind_s >= BEHIND_NOTICE_S ? s : null;
      }, 30_000);
      assertEquals(behind.nodes[0].node_id, NODE);
      assertEquals(behind.unsent_frames, FRAMES);
      const page = await nodesPage();
      assertStringIncludes(page, "The server is behind storing agents");
      assertStringIncludes(page, `${NODE}: ${FRAMES} frames`);
      // Seconds later, still nothing past the window.
      assertEquals(metricsSent(), MAX_IN_FLIGHT);

      // The gate opens: everything is acked, the agent holds nothing, the page says so.
      relay.open();
      await eventually(() => connection.backlog().frames === 0, 120_000);
      await eventually(async () => (await status()).unsent_frames === 0, 30_000);
      assert(!(await nodesPage()).includes(`${NODE}: `));
      assertEquals(metricsSent(), FRAMES); // each frame sent once: none needed a resend
      const bySeq = h.ctx.db.sqlite.prepare(
        "SELECT step FROM metric_points WHERE run_id = ? ORDER BY seq",
      ).all(ref.run_id) as { step: number }[];
      assertEquals(bySeq.map((p) => p.step), Array.from({ length: FRAMES }, (_, i) => i + 1));
    } finally {
      await connection.stop();
      await relay.close();
      await h.stop();
      await spool.close();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
