import { assert, assertEquals } from "../tests/assert.ts";
import type { HeartbeatFrame, HelloFrame } from "../protocol/agent.ts";
import { eventually, FakeServer } from "./_fake_server.ts";
import {
  backoffDelay,
  Connection,
  type ConnectionOptions,
  MAX_BACKOFF_MS,
  MAX_IN_FLIGHT,
  MIN_BACKOFF_MS,
  type ServerCommand,
} from "./connection.ts";
import type { NewDataFrame } from "./frames.ts";
import { memoryLogger } from "./log.ts";
import { Spool } from "./spool.ts";

Deno.test("backoffDelay() grows from 1 s to at most 30 s, with jitter", () => {
  assertEquals(backoffDelay(0, () => 0), MIN_BACKOFF_MS);
  assertEquals(backoffDelay(0, () => 1), MIN_BACKOFF_MS);
  assertEquals(backoffDelay(1, () => 1), 2000);
  assertEquals(backoffDelay(3, () => 0), 4000);
  assertEquals(backoffDelay(3, () => 1), 8000);
  assertEquals(backoffDelay(20, () => 1), MAX_BACKOFF_MS);
  assertEquals(backoffDelay(20, () => 0), MAX_BACKOFF_MS / 2);
  for (let attempt = 0; attempt < 40; attempt++) {
    const delay = backoffDelay(attempt, Math.random);
    assert(delay >= MIN_BACKOFF_MS && delay <= MAX_BACKOFF_MS, `attempt ${attempt}: ${delay}`);
  }
  // Jitter spreads agents that fail together.
  assert(backoffDelay(4, () => 0.1) !== backoffDelay(4, () => 0.9));
});

function hello(): HelloFrame {
  return {
    type: "hello",
    node_id: "node-t",
    hostname: "node-t",
    agent_version: "test",
    gpus: [],
    fake_gpus: false,
    cpu_count: 2,
    memory_mb: 1000,
    disk_free_mb: null,
    labels: {},
    cpu_slots: 2,
    avoid_foreign_gpus: false,
    running: [],
  };
}

function heartbeat(): HeartbeatFrame {
  return {
    type: "heartbeat",
    ts: Date.now() / 1000,
    gpus: [],
    cpu_pct: null,
    mem_used_mb: null,
    disk_free_mb: null,
    foreign: [],
    running: [],
  };
}

function event(i: number): NewDataFrame {
  return {
    type: "event",
    stream: "data",
    event: { type: "TEST", severity: "info", message: `e${i}` },
  };
}

async function setup(lease: Partial<ConnectionOptions> = {}) {
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir);
  const server = FakeServer.start();
  const log = memoryLogger();
  const commands: ServerCommand[] = [];
  const connection = new Connection({
    url: server.url.replace("http", "ws") + "/api/agent/ws",
    token: "agent-token",
    spool,
    log,
    hello,
    heartbeat,
    onCommand: (c) => commands.push(c),
    heartbeatMs: 50,
    backoff: () => 50,
    ...lease,
  });
  const cleanup = async () => {
    await connection.stop();
    await server.stop();
    await spool.close();
    await Deno.remove(dir, { recursive: true });
  };
  return { dir, spool, server, log, commands, connection, cleanup };
}

Deno.test("Connection says hello with its token, replays the spool, then sends live", async () => {
  const { spool, server, connection, cleanup } = await setup();
  try {
    for (let i = 1; i <= 3; i++) await spool.append(event(i));
    connection.start();
    await eventually("3 replayed frames", () => server.applied.length === 3);
    assertEquals(server.authorizations, ["Bearer agent-token"]);
    assertEquals(server.hellos.length, 1);
    await spool.append(event(4));
    await spool.append({ ...event(5), stream: "sys" } as NewDataFrame);
    await eventually("live frames", () => server.applied.length === 5);
    await eventually("heartbeats", () => server.heartbeats.length >= 2);
    await eventually("the spool trimmed by acks", () => spool.stats().streams.data.acked === 4);
    assertEquals(server.invalid, []);
  } finally {
    await cleanup();
  }
});

Deno.test("Connection replays exactly what the server lacks after a reconnect", async () => {
  const { spool, server, connection, cleanup } = await setup();
  try {
    connection.start();
    await eventually("connected", () => server.hellos.length === 1);
    for (let i = 1; i <= 5; i++) await spool.append(event(i));
    await eventually("5 frames", () => server.applied.length === 5);
    // Acks lost on the way: the server has 6..8, the agent does not know it.
    server.sendAcks = false;
    for (let i = 6; i <= 8; i++) await spool.append(event(i));
    await eventually("8 frames", () => server.applied.length === 8);
    await server.dropConnection();
    server.sendAcks = true;
    // Spooled while disconnected.
    for (let i = 9; i <= 12; i++) await spool.append(event(i));
    await eventually("reconnected", () => server.hellos.length === 2);
    await eventually("12 frames", () => server.applied.length === 12);
    for (let i = 13; i <= 14; i++) await spool.append(event(i));
    await eventually("14 frames", () => server.applied.length === 14);
    assertEquals(server.applied.map((f) => f.seq), Array.from({ length: 14 }, (_, i) => i + 1));
    assertEquals(server.ignored, [], "nothing the server had was sent again");
  } finally {
    await cleanup();
  }
});

Deno.test("Connection retries while the server refuses, and spools meanwhile", async () => {
  const { spool, server, connection, log, cleanup } = await setup();
  try {
    server.refuse = true;
    connection.start();
    await eventually("two refused attempts", () => server.authorizations.length >= 2);
    await spool.append(event(1));
    server.refuse = false;
    await eventually("the frame delivered", () => server.applied.length === 1);
    assert(log.lines.some((line) => line.includes("cannot connect")));
  } finally {
    await cleanup();
  }
});

Deno.test("Connection passes commands on and logs invalid frames without acting on them", async () => {
  const { server, connection, commands, log, cleanup } = await setup();
  try {
    connection.start();
    await eventually("connected", () => server.hellos.length === 1);
    server.send({ type: "cancel", job_id: "j-1", attempt: 1, grace_s: 0, reason: "stale" });
    server.send({ type: "cancel", job_id: "j-1" });
    server.send({ type: "nonsense" });
    server.send({ type: "error", message: "Refused job_state frame data#3: no such job" });
    await eventually("the cancel", () => commands.length === 1);
    assertEquals(commands[0], {
      type: "cancel",
      job_id: "j-1",
      attempt: 1,
      grace_s: 0,
      reason: "stale",
    });
    await eventually("the refusal logged", () => log.lines.some((l) => l.includes("no such job")));
    assertEquals(log.lines.filter((l) => l.includes("ignoring an invalid frame")).length, 2);
    assert(connection.connected);
  } finally {
    await cleanup();
  }
});

Deno.test("Connection numbers on from the server's cursor when the agent lost its spool", async () => {
  const { spool, server, connection, cleanup } = await setup();
  try {
    server.cursors.data = 100;
    await spool.append(event(1)); // numbered 1 by a fresh spool: the server would skip it
    connection.start();
    await eventually("the renumbered frame", () => server.applied.length === 1);
    await spool.append(event(2));
    await eventually("the next frame", () => server.applied.length === 2);
    assertEquals(server.applied.map((f) => f.seq), [101, 102]);
    assertEquals(server.ignored, []);
  } finally {
    await cleanup();
  }
});

Deno.test("Connection renews the lease only when the server answers, from the answered frame's send time", async () => {
  let clock = 0;
  const leases: number[] = [];
  const sent: number[] = [];
  const { server, connection, cleanup } = await setup({
    monotonic: () => clock,
    onLease: (at) => leases.push(at),
    answerTimeoutMs: 60_000, // the fake clock jumps 1 s between 50 ms heartbeats
    heartbeat: () => {
      sent.push(clock);
      return heartbeat();
    },
  });
  try {
    server.sendLeases = false;
    connection.start();
    await eventually("heartbeats", () => server.heartbeats.length >= 3);
    assertEquals(leases, []); // heard nothing back: the lease runs down
    server.sendLeases = true;
    clock = 1000;
    const from = server.heartbeats.length;
    await eventually("a lease", () => leases.length > 0);
    // The reply answers the oldest frame not yet answered: the hello, sent at 0.
    assertEquals(leases[0], 0);
    await eventually("later leases", () => leases.some((at) => at === 1000));
    assert(server.heartbeats.length > from);
    assert(leases.every((at) => at === 0 || sent.includes(at)), leases.join());
  } finally {
    await cleanup();
  }
});

Deno.test("Connection gives up a connection whose heartbeats go unanswered (half-open) and connects again", async () => {
  const { server, connection, log, cleanup } = await setup({ answerTimeoutMs: 200 });
  try {
    server.sendLeases = false; // the socket stays open, but nothing answers
    connection.start();
    await eventually("a second connection", () => server.hellos.length >= 2, 5000);
    assert(log.lines.some((line) => line.includes("giving up a silent connection")));
    server.sendLeases = true;
    const hellos = server.hellos.length;
    await eventually("heartbeats answered", () => server.heartbeats.length >= 10);
    assertEquals(server.hellos.length, hellos, "an answered connection is kept");
  } finally {
    await cleanup();
  }
});

Deno.test("Connection keeps the lease while nothing listens at the server's address, not while it is unreachable", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close(); // nothing listens there now: a connection is refused
  const refused: number[] = [];
  const dir = await Deno.makeTempDir();
  const spool = await Spool.open(dir);
  const options = {
    url: `ws://127.0.0.1:${port}/api/agent/ws`,
    token: "agent-token",
    spool,
    log: memoryLogger(),
    hello,
    heartbeat,
    onCommand: () => {},
    heartbeatMs: 50,
    backoff: () => 20,
  };
  const down = new Connection({ ...options, onLease: (at) => refused.push(at) });
  const unknown: number[] = [];
  const partitioned = new Connection({
    ...options,
    onLease: (at) => unknown.push(at),
    serverRefuses: () => Promise.resolve(false), // a timeout, say: no proof the server is down
  });
  try {
    down.start();
    partitioned.start();
    await eventually("a lease from a refusal", () => refused.length >= 2);
    assertEquals(unknown, []);
  } finally {
    await down.stop();
    await partitioned.stop();
    await spool.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Connection keeps at most MAX_IN_FLIGHT frames unacknowledged: a server that is behind gets the rest as it acks, in order, once", async () => {
  const { spool, server, connection, cleanup } = await setup();
  try {
    connection.start();
    await eventually("connected", () => server.hellos.length === 1 && server.connected);
    await eventually("the cursor's ack", () => spool.stats().streams.data.acked === 0);
    server.sendAcks = false; // the server is behind: it stores nothing for now
    for (let i = 1; i <= 3 * MAX_IN_FLIGHT; i++) await spool.append(event(i));
    await eventually("a window's frames", () => server.applied.length === MAX_IN_FLIGHT);
    // The rest waits in the spool; the agent says how much and since when.
    assertEquals(spool.stats().streams.data.newest, 3 * MAX_IN_FLIGHT);
    const held = connection.backlog();
    assertEquals(held.frames, 3 * MAX_IN_FLIGHT);
    assert(held.oldest_s >= 0);
    // Each ack lets the next frames go, never more than the window ahead of it.
    server.send({ type: "ack", stream: "data", seq: MAX_IN_FLIGHT });
    await eventually("the next window", () => server.applied.length === 2 * MAX_IN_FLIGHT);
    server.sendAcks = true;
    server.send({ type: "ack", stream: "data", seq: 2 * MAX_IN_FLIGHT });
    await eventually("all frames", () => server.applied.length === 3 * MAX_IN_FLIGHT);
    assertEquals(
      server.applied.map((f) => f.seq),
      Array.from({ length: 3 * MAX_IN_FLIGHT }, (_, i) => i + 1),
    );
    assertEquals(server.ignored, []);
    await eventually("nothing held back", () => connection.backlog().frames === 0);
    // Live again: a new frame goes out at once.
    await spool.append(event(999));
    await eventually("a live frame", () => server.applied.length === 3 * MAX_IN_FLIGHT + 1);
  } finally {
    await cleanup();
  }
});
