/**
 * Fault injection with real processes: the agent or the server killed with SIGKILL while a
 * job runs. Nothing may be lost or duplicated, and no job may run twice at once.
 */
import { assert, assertEquals } from "./assert.ts";
import { api, nodeOnline, startAgentProcess, startServerProcess, until } from "./_processes.ts";

/** A job that prints N numbered lines and logs N points through the SDK, slowly. */
function streamingJob(n: number, sleepS: number, pidFile: string) {
  return `
import os, time
from gpuctl import run
with open(${JSON.stringify(pidFile)}, "a") as f:
    f.write(str(os.getpid()) + "\\n")
for i in range(1, ${n} + 1):
    print(f"line {i}", flush=True)
    run.log({"value": float(i)}, step=i)
    time.sleep(${sleepS})
run.finish()
`;
}

async function logsOf(call: ReturnType<typeof api>, runId: string): Promise<string[]> {
  const res = await call("GET", `/api/runs/${runId}/logs?after_seq=0&limit=2000`);
  return res.json.lines.map((l: { text: string }) => l.text);
}

async function pointsOf(call: ReturnType<typeof api>, runId: string) {
  const res = await call("POST", "/api/runs/metrics:query", { runs: [runId], keys: ["value"] });
  return res.json.series[0] ?? { steps: [], values: [] };
}

const expectedLines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i + 1}`);

Deno.test("server killed with SIGKILL mid-job: after a restart every line and point arrives exactly once", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-fault-server-" });
  let server = await startServerProcess(`${home}/server`);
  const agent = startAgentProcess({
    server: server.url,
    token: server.agentToken,
    dataDir: `${home}/agent`,
  });
  try {
    const call = () => api(server.url, server.adminToken);
    await nodeOnline(call());
    const n = 120;
    const job = (await call()("POST", "/api/jobs", {
      name: "stream",
      command: ["python3", "-c", streamingJob(n, 0.04, `${home}/pids`)],
      working_dir: home,
      gpus: 0,
    })).json;
    const running = await until(
      async () => {
        const j = (await call()("GET", `/api/jobs/${job.id}`)).json;
        return j.status === "RUNNING" && (await logsOf(call(), j.run_id)).length > 10 ? j : null;
      },
      30_000,
      "job streaming",
    );

    const killed = await server.proc.kill("SIGKILL");
    assertEquals(killed.signal, "SIGKILL");
    await new Promise((r) => setTimeout(r, 1500)); // the job goes on; the agent spools
    server = await startServerProcess(`${home}/server`, server.port);

    const done = await until(
      async () => {
        const j = (await call()("GET", `/api/jobs/${job.id}`)).json;
        return ["SUCCEEDED", "FAILED"].includes(j.status) ? j : null;
      },
      60_000,
      "job finished",
    );
    assertEquals(done.status, "SUCCEEDED");
    assertEquals(done.run_id, running.run_id);
    const lines = await until(
      async () => {
        const l = await logsOf(call(), done.run_id);
        return l.length >= n ? l : null;
      },
      20_000,
      "all lines",
    );
    assertEquals(lines, expectedLines(n));
    const s = await until(
      async () => {
        const p = await pointsOf(call(), done.run_id);
        return p.steps.length >= n ? p : null;
      },
      20_000,
      "all points",
    );
    assertEquals(s.steps, Array.from({ length: n }, (_, i) => i + 1));
    assertEquals(s.values.reduce((a: number, b: number) => a + b, 0), (n * (n + 1)) / 2);
    const started =
      (await call()("GET", `/api/events?job_id=${job.id}&type=RUN_STARTED`)).json.items;
    assertEquals(started.length, 1);
  } finally {
    await agent.kill("SIGTERM");
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("agent killed with SIGKILL mid-job: node OFFLINE, job LOST and requeued; the restarted agent reattaches, never two copies", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-fault-agent-" });
  await Deno.mkdir(`${home}/server`, { recursive: true });
  await Deno.writeTextFile(`${home}/server/server.yaml`, "node_timeout_s: 3\n");
  const server = await startServerProcess(`${home}/server`);
  const agentOpts = {
    server: server.url,
    token: server.agentToken,
    dataDir: `${home}/agent`,
    fakeGpus: 1,
  };
  let agent = startAgentProcess(agentOpts);
  const call = api(server.url, server.adminToken);
  try {
    await nodeOnline(call);
    const n = 150;
    const pidFile = `${home}/pids`;
    const job = (await call("POST", "/api/jobs", {
      name: "survivor",
      command: ["python3", "-c", streamingJob(n, 0.05, pidFile)],
      working_dir: home,
      gpus: 1,
    })).json;
    const first = await until(
      async () => {
        const j = (await call("GET", `/api/jobs/${job.id}`)).json;
        return j.status === "RUNNING" && (await logsOf(call, j.run_id)).length > 5 ? j : null;
      },
      30_000,
      "job running",
    );

    await agent.kill("SIGKILL");
    const lost = await until(
      async () => {
        const j = (await call("GET", `/api/jobs/${job.id}`)).json;
        return j.failure_class === "NODE_LOST" ? j : null;
      },
      30_000,
      "job lost",
    );
    assertEquals([lost.status, lost.attempt], ["QUEUED", 2]);
    assertEquals((await call("GET", "/api/nodes")).json.items[0].status, "OFFLINE");
    assertEquals((await call("GET", `/api/runs/${first.run_id}`)).json.status, "LOST");

    agent = startAgentProcess(agentOpts);
    const done = await until(
      async () => {
        const j = (await call("GET", `/api/jobs/${job.id}`)).json;
        return ["SUCCEEDED", "FAILED"].includes(j.status) ? j : null;
      },
      60_000,
      "job finished",
    );
    assertEquals([done.status, done.attempt, done.run_id], ["SUCCEEDED", 1, first.run_id]);
    // The job's process started once: the reattached agent found it, no second copy ran.
    const pids = (await Deno.readTextFile(pidFile)).trim().split("\n");
    assertEquals(pids.length, 1);
    const lines = await until(
      async () => {
        const l = await logsOf(call, done.run_id);
        return l.length >= n ? l : null;
      },
      20_000,
      "all lines",
    );
    assertEquals(lines, expectedLines(n));
    const dispatched =
      (await call("GET", `/api/events?job_id=${job.id}&type=JOB_DISPATCHED`)).json.items;
    assertEquals(dispatched.length, 1);
    const runs = (await call("GET", `/api/runs?job_id=${job.id}`)).json.items;
    assertEquals(runs.length, 1);
    assert(runs[0].status === "SUCCEEDED");
  } finally {
    await agent.kill("SIGTERM");
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
});

/**
 * A job that notes its pid, notes an overlap if an earlier attempt's process is still alive
 * when it starts, and runs until `stopFile` exists.
 */
function fencedJob(dir: string) {
  return `
import os, time
pids, overlap, stop = ${JSON.stringify(`${dir}/pids`)}, ${JSON.stringify(`${dir}/overlap`)}, ${
    JSON.stringify(`${dir}/stop`)
  }
earlier = open(pids).read().split() if os.path.exists(pids) else []
for p in earlier:
    try:
        os.kill(int(p), 0)
        with open(overlap, "a") as f:
            f.write(f"{os.getpid()} started while {p} ran\\n")
    except ProcessLookupError:
        pass
with open(pids, "a") as f:
    f.write(f"{os.getpid()}\\n")
while not os.path.exists(stop):
    time.sleep(0.1)
`;
}

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT"); // harmless; throws when the process is gone
    return true;
  } catch {
    return false;
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("server down longer than the agents' fence_after_s: nothing listens, so the agent keeps its lease and its job", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-fault-lease-" });
  let server = await startServerProcess(`${home}/server`);
  const agent = startAgentProcess({
    server: server.url,
    token: server.agentToken,
    dataDir: `${home}/agent`,
    fenceAfterS: 3,
  });
  try {
    const call = () => api(server.url, server.adminToken);
    await nodeOnline(call());
    const job = (await call()("POST", "/api/jobs", {
      name: "long",
      command: ["python3", "-c", fencedJob(home)],
      working_dir: home,
      gpus: 0,
    })).json;
    await until(
      async () => (await call()("GET", `/api/jobs/${job.id}`)).json.status === "RUNNING",
      30_000,
      "job running",
    );
    const pid = Number(
      (await until(() => exists(`${home}/pids`), 10_000, "pid")) &&
        (await Deno.readTextFile(`${home}/pids`)).trim(),
    );
    const killedAt = Date.now();
    await server.proc.kill("SIGKILL");
    // The agent renews its lease from refused connections: wait until it did so more than
    // fence_after_s after the server's last word.
    await until(
      async () => {
        try {
          const lease = JSON.parse(await Deno.readTextFile(`${home}/agent/lease.json`));
          return lease.renewed_at_ms > killedAt + 4_000;
        } catch {
          return false;
        }
      },
      20_000,
      "a lease renewed by refusals past fence_after_s",
    );
    assert(alive(pid), "the job was stopped while the server was down");
    server = await startServerProcess(`${home}/server`, server.port);
    await Deno.writeTextFile(`${home}/stop`, "");
    const done = await until(
      async () => {
        const j = (await call()("GET", `/api/jobs/${job.id}`)).json;
        return ["SUCCEEDED", "FAILED", "LOST"].includes(j.status) ? j : null;
      },
      30_000,
      "job finished",
    );
    assertEquals([done.status, done.attempt], ["SUCCEEDED", 1]);
    const fenced = (await call()("GET", `/api/events?job_id=${job.id}&type=JOB_FENCED`)).json;
    assertEquals(fenced.items, []);
  } finally {
    await agent.kill("SIGTERM");
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("agent stopped (SIGSTOP) past the node timeout with a free second node: the agent's fence stops attempt 1 before attempt 2 starts", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-fault-fence-" });
  await Deno.mkdir(`${home}/server`, { recursive: true });
  await Deno.writeTextFile(`${home}/server/server.yaml`, "node_timeout_s: 3\n");
  const server = await startServerProcess(`${home}/server`);
  const agentOf = (nodeId: string) =>
    startAgentProcess({
      server: server.url,
      token: server.agentToken,
      dataDir: `${home}/${nodeId}`,
      nodeId,
      fakeGpus: 1,
      fenceAfterS: 2,
    });
  const first = agentOf("node-1");
  let second: ReturnType<typeof agentOf> | null = null;
  const call = api(server.url, server.adminToken);
  try {
    await nodeOnline(call);
    const job = (await call("POST", "/api/jobs", {
      name: "fenced",
      command: ["python3", "-c", fencedJob(home)],
      working_dir: home,
      gpus: 1,
      grace_s: 1,
    })).json;
    await until(
      async () => (await call("GET", `/api/jobs/${job.id}`)).json.status === "RUNNING",
      30_000,
      "attempt 1 running",
    );
    second = agentOf("node-2");
    await until(
      async () =>
        (await call("GET", "/api/nodes")).json.items.filter((n: { status: string }) =>
          n.status === "ONLINE"
        ).length === 2,
      30_000,
      "node-2 online",
    );

    first.child.kill("SIGSTOP");
    const held = await until(
      async () => {
        const j = (await call("GET", `/api/jobs/${job.id}`)).json;
        return j.failure_class === "NODE_LOST" ? j : null;
      },
      30_000,
      "attempt 1 lost",
    );
    // Requeued, but held until node-1's lease has surely run out: not on node-2 yet.
    assertEquals([held.status, held.attempt], ["QUEUED", 2]);
    assert(held.not_before !== null, JSON.stringify(held));
    assert(held.reason.includes("next attempt at"), held.reason);
    // node-1 stays stopped until 2 s before its lease surely ran out; attempt 2 must not start
    // meanwhile, though node-2 is free (before fencing, it started at once).
    const wakeAt = Date.parse(held.not_before) - 2_000;
    while (Date.now() < wakeAt) {
      const started = (await Deno.readTextFile(`${home}/pids`)).trim().split("\n").length;
      assertEquals(started, 1, "attempt 2 started while node-1's lease ran");
      await new Promise((r) => setTimeout(r, 100));
    }
    first.child.kill("SIGCONT");

    const fenced = await until(
      async () => (await call("GET", `/api/events?job_id=${job.id}&type=JOB_FENCED`)).json.items[0],
      30_000,
      "node-1's agent reports it stopped attempt 1",
    );
    assertEquals(fenced.node_id, "node-1");
    await until(
      async () => (await Deno.readTextFile(`${home}/pids`)).trim().split("\n").length === 2,
      30_000,
      "attempt 2 started",
    );
    await Deno.writeTextFile(`${home}/stop`, "");
    const done = await until(
      async () => {
        const j = (await call("GET", `/api/jobs/${job.id}`)).json;
        return j.status === "SUCCEEDED" ? j : null;
      },
      30_000,
      "attempt 2 finished",
    );
    assertEquals(done.attempt, 2);
    assertEquals(await exists(`${home}/overlap`), false, "two attempts ran at once");
  } finally {
    first.child.kill("SIGCONT");
    await first.kill("SIGTERM");
    await second?.kill("SIGTERM");
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
});
