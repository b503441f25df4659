/**
 * Faults with ledgers: an agent cut off from the server by a TCP proxy between them.
 *
 * - Cut off for less than the node timeout: nothing a user sees changes (the node stays
 *   ONLINE, the job RUNNING as attempt 1) and every record arrives once.
 * - Cut off past the node timeout: the node goes OFFLINE and the job LOST; the agent's lease
 *   runs out first, so it stops the job itself, and when it returns the job's next attempt
 *   runs there, never beside the first.
 * - A half-open connection (the server's side gone, the agent's side silent): the agent
 *   notices that its heartbeats go unanswered and connects again before its lease runs out.
 *
 * Short tier: node_timeout_s 6 (4 past the timeout), fence_after_s 4 (3), cuts of 1.5 s; the
 * half-open case node_timeout_s 16 and fence_after_s 12, the margin a loaded machine needs.
 * GPUCTL_FAULTS=long: the defaults, node_timeout_s 90 and fence_after_s 60, a 30 s cut.
 * - The agent frozen (SIGSTOP) past the node timeout, long form only (the short one is
 *   `tests/e2e_faults_test.ts`): detected by heartbeat expiry; woken, the agent stops
 *   attempt 1 itself and the next attempt runs alone.
 */
import { assert, assertEquals } from "./assert.ts";
import { api, type Proc, startAgentProcess, startServerProcess, until } from "./_processes.ts";
import { TcpProxy } from "./_tcp_proxy.ts";
import { KINDS, readLedger, sdkJob, storedOnceEqual } from "./_fault_jobs.ts";
import { storedRecords } from "./_ledger.ts";

const LONG = Deno.env.get("GPUCTL_FAULTS") === "long";

interface Seen {
  node: Set<string>;
  job: Set<string>;
}

async function partitioned(
  opts: { timeoutS: number; fenceS: number },
  body: (c: {
    home: string;
    dbPath: string;
    proxy: TcpProxy;
    call: ReturnType<typeof api>;
    job: { id: string; run_id: string };
    seen: Seen;
    agent: Proc;
    stopJob(): Promise<{ status: string; attempt: number; run_id: string }>;
  }) => Promise<void>,
) {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-faults-cut-" });
  await Deno.mkdir(`${home}/server`, { recursive: true });
  await Deno.writeTextFile(`${home}/server/server.yaml`, `node_timeout_s: ${opts.timeoutS}\n`);
  const server = await startServerProcess(`${home}/server`);
  const proxy = TcpProxy.start(server.port);
  const agent = startAgentProcess({
    server: proxy.url,
    token: server.agentToken,
    dataDir: `${home}/agent`,
    fakeGpus: 1,
    fenceAfterS: opts.fenceS,
  });
  const call = api(server.url, server.adminToken);
  let watching = true;
  let watcher: Promise<void> | null = null;
  try {
    await until(
      async () => (await call("GET", "/api/nodes")).json.items[0]?.status === "ONLINE",
      30_000,
      "node online",
    );
    const submitted = await call("POST", "/api/jobs", {
      name: "cut",
      command: ["python3", "-c", sdkJob(home, "cut")],
      working_dir: home,
      gpus: 1,
      grace_s: 1,
    });
    assertEquals(submitted.status, 201, submitted.text);
    const job = await until(
      async () => {
        const j = (await call("GET", `/api/jobs/${submitted.json.id}`)).json;
        return j.status === "RUNNING" ? j : null;
      },
      30_000,
      "job running",
    );
    await until(
      async () => {
        try {
          return (await Deno.readTextFile(`${home}/cut.pids`)).trim() !== "";
        } catch {
          return false;
        }
      },
      30_000,
      "the job's process",
    );
    // What a user polling the API would have seen, every 200 ms.
    const seen: Seen = { node: new Set(), job: new Set() };
    watcher = (async () => {
      while (watching) {
        const n = (await call("GET", "/api/nodes")).json.items[0];
        const j = (await call("GET", `/api/jobs/${job.id}`)).json;
        seen.node.add(n.status);
        seen.job.add(`${j.status}#${j.attempt}`);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    await body({
      home,
      dbPath: `${home}/server/gpuctl.db`,
      proxy,
      call,
      job,
      seen,
      agent,
      async stopJob() {
        await Deno.writeTextFile(`${home}/stop`, "");
        return await until(
          async () => {
            const j = (await call("GET", `/api/jobs/${job.id}`)).json;
            return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(j.status) ? j : null;
          },
          60_000,
          "job ended",
        );
      },
    });
  } finally {
    watching = false;
    await watcher?.catch(() => {});
    await Deno.writeTextFile(`${home}/stop`, "").catch(() => {});
    await agent.kill("SIGTERM");
    await proxy.close();
    await server.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
}

async function assertLedgerStored(dbPath: string, home: string, run: string) {
  const want = await readLedger(home, "cut", run);
  assert(want.lines.count > 1, "the job handed over nothing");
  const stored = await storedOnceEqual(dbPath, run, want);
  const show = (l: typeof want) => KINDS.map((k) => `${k} ${l[k]}`).join(", ");
  assertEquals(show(stored), show(want), `run ${run}`);
  return want;
}

/**
 * An attempt stopped by SIGTERM: its printed lines are all stored (the agent reads them from
 * its output files), but the SDK inside it, which installs no signal handler, takes its last
 * unsent batch with it. So the stored points and checkpoints are what it logged minus at
 * most the last second of it, each once.
 */
async function assertKilledAttemptStored(dbPath: string, home: string, run: string) {
  const want = await readLedger(home, "cut", run);
  const stored = await storedOnceEqual(dbPath, run, want, 5_000);
  assertEquals(String(stored.lines), String(want.lines), "lines");
  const sent = (await Deno.readTextFile(`${home}/cut.ledger`)).split("\n")
    .filter((l) => l.startsWith("p|") && l.split("|")[1] === run);
  const kept = storedRecords(dbPath, run).points;
  assertEquals(new Set(kept).size, kept.length);
  const sentSet = new Set(sent);
  assertEquals(kept.filter((r) => !sentSet.has(r)), [], "points nobody sent");
  const step = (r: string) => Number(r.split("|")[3]);
  const last = Math.max(0, ...kept.map(step));
  const missing = sent.filter((r) => !kept.includes(r));
  assert(missing.every((r) => step(r) > last), `lost before the tail: ${missing.join(", ")}`);
  assert(missing.length <= 20, `${missing.length} points lost`);
  return { ...want, missing: missing.length };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

Deno.test("agent cut off for less than the node timeout: the node stays ONLINE, the job RUNNING, every record arrives once", async () => {
  const cutMs = LONG ? 30_000 : 1_500;
  // The short form leaves the agent 12 s of lease: an unanswered heartbeat is noticed after 3 s
  // (ANSWER_TIMEOUT_HEARTBEATS at a 1 s heartbeat), and a loaded test machine can take several
  // more to connect, say hello and be answered. A 4 s lease fenced the job there now and then.
  await partitioned(
    LONG ? { timeoutS: 90, fenceS: 60 } : { timeoutS: 16, fenceS: 12 },
    async ({ home, dbPath, proxy, call, job, seen, stopJob }) => {
      await pause(500);
      const accepted = proxy.accepted;
      proxy.setMode("blackhole");
      await pause(cutMs);
      proxy.setMode("pass");
      await until(() => proxy.accepted > accepted, 30_000, "the agent connected again");
      await until(
        async () => (await call("GET", "/api/nodes")).json.items[0].last_heartbeat_at !== null,
        10_000,
      );
      await pause(1500); // a few heartbeats over the new connection
      const done = await stopJob();
      assertEquals([done.status, done.attempt, done.run_id], ["SUCCEEDED", 1, job.run_id]);
      assertEquals([...seen.node], ["ONLINE"]);
      assertEquals([...seen.job].filter((s) => s !== "SUCCEEDED#1"), ["RUNNING#1"]);
      const events = (await call("GET", "/api/events?limit=500")).json.items.map((
        e: { type: string },
      ) => e.type);
      for (const t of ["NODE_OFFLINE", "JOB_FENCED", "JOB_LOST"]) {
        assert(!events.includes(t), `${t} raised: ${events.join(", ")}`);
      }
      const want = await assertLedgerStored(dbPath, home, job.run_id);
      // deno-lint-ignore no-console -- what this scenario compared
      console.log(
        `cut ${cutMs / 1000} s: node ONLINE throughout; ledger equal (${
          KINDS.map((k) => `${k} ${want[k]}`).join(", ")
        })`,
      );
    },
  );
});

Deno.test("agent cut off past the node timeout: OFFLINE and LOST, the agent fences its job, and on its return the next attempt runs there alone", async () => {
  const opts = LONG ? { timeoutS: 90, fenceS: 60 } : { timeoutS: 4, fenceS: 3 };
  await partitioned(opts, async ({ home, dbPath, proxy, call, job, seen, stopJob }) => {
    await pause(500);
    const pid = Number((await Deno.readTextFile(`${home}/cut.pids`)).trim());
    const t0 = Date.now();
    proxy.setMode("blackhole");
    const lost = await until(
      async () => {
        const j = (await call("GET", `/api/jobs/${job.id}`)).json;
        return j.failure_class === "NODE_LOST" ? j : null;
      },
      (opts.timeoutS + 30) * 1000,
      "job lost",
    );
    const offlineAfterS = (Date.now() - t0) / 1000;
    // Read at once: on a loaded machine the node can be back before the 200 ms poller looks.
    const offline = (await call("GET", "/api/nodes")).json.items[0].status;
    seen.node.add(offline);
    assertEquals(offline, "OFFLINE");
    assertEquals([lost.status, lost.attempt], ["QUEUED", 2]);
    // The agent's lease ran out before the server's timeout: it stopped the job itself.
    await until(
      () => {
        try {
          Deno.kill(pid, "SIGCONT");
          return false;
        } catch {
          return true;
        }
      },
      30_000,
      "attempt 1 stopped by its agent",
    );
    proxy.setMode("pass");
    const fenced = await until(
      async () => (await call("GET", `/api/events?job_id=${job.id}&type=JOB_FENCED`)).json.items[0],
      60_000,
      "JOB_FENCED reported",
    );
    assertEquals(fenced.node_id, "e2e-node");
    const second = await until(
      async () => {
        const j = (await call("GET", `/api/jobs/${job.id}`)).json;
        return j.status === "RUNNING" && j.attempt === 2 ? j : null;
      },
      60_000,
      "attempt 2 running",
    );
    await until(
      async () => (await Deno.readTextFile(`${home}/cut.pids`)).trim().split("\n").length === 2,
      30_000,
      "attempt 2's process",
    );
    await until(
      async () => (await readLedger(home, "cut", second.run_id)).points.count > 5,
      30_000,
      "attempt 2 streaming",
    );
    const done = await stopJob();
    assertEquals([done.status, done.attempt], ["SUCCEEDED", 2]);
    assert(seen.node.has("OFFLINE"));
    let overlap = "";
    try {
      overlap = await Deno.readTextFile(`${home}/cut.overlap`);
    } catch {
      // none: good
    }
    assertEquals(overlap, "", "two attempts ran at once");
    const first = await assertKilledAttemptStored(dbPath, home, job.run_id);
    const next = await assertLedgerStored(dbPath, home, second.run_id);
    // deno-lint-ignore no-console -- what this scenario compared
    console.log(
      `cut past the timeout: OFFLINE and LOST after ${
        offlineAfterS.toFixed(1)
      } s (node_timeout_s ${opts.timeoutS}); attempt 1 (stopped by its agent) lines ${first.lines} equal, points stored ${
        first.points.count - first.missing
      } of ${first.points.count}, the rest its SDK's unsent last batch; attempt 2 ledger equal: points ${next.points} lines ${next.lines}`,
    );
  });
});

Deno.test("half-open connection: the server's side closed, the agent's silent; unanswered heartbeats make the agent connect again before its lease runs out", async () => {
  // The short form leaves the agent 12 s of lease: an unanswered heartbeat is noticed after 3 s
  // (ANSWER_TIMEOUT_HEARTBEATS at a 1 s heartbeat), and a loaded test machine can take several
  // more to connect, say hello and be answered. A 4 s lease fenced the job there now and then.
  await partitioned(
    LONG ? { timeoutS: 90, fenceS: 60 } : { timeoutS: 16, fenceS: 12 },
    async ({ home, dbPath, proxy, call, job, seen, stopJob }) => {
      await pause(500);
      const accepted = proxy.accepted;
      const t0 = Date.now();
      proxy.setMode("half-open");
      proxy.setMode("pass", { existing: false }); // the old connection stays silent forever
      await until(() => proxy.accepted > accepted, 60_000, "the agent connected again");
      const reconnectS = (Date.now() - t0) / 1000;
      await pause(1500);
      const done = await stopJob();
      assertEquals([done.status, done.attempt, done.run_id], ["SUCCEEDED", 1, job.run_id]);
      assertEquals([...seen.node], ["ONLINE"]);
      const fenced = (await call("GET", `/api/events?job_id=${job.id}&type=JOB_FENCED`)).json;
      assertEquals(fenced.items, []);
      const want = await assertLedgerStored(dbPath, home, job.run_id);
      // deno-lint-ignore no-console -- what this scenario measured
      console.log(
        `half-open: the agent connected again after ${
          reconnectS.toFixed(1)
        } s; ledger equal (points ${want.points}, lines ${want.lines})`,
      );
    },
  );
});

Deno.test({
  name:
    "agent frozen with SIGSTOP past the node timeout: OFFLINE by heartbeat expiry; woken with SIGCONT it stops attempt 1 itself, and the next attempt runs alone",
  ignore: !LONG,
  async fn() {
    const opts = { timeoutS: 90, fenceS: 60 };
    await partitioned(opts, async ({ home, dbPath, call, job, agent, stopJob }) => {
      await pause(500);
      const t0 = Date.now();
      agent.child.kill("SIGSTOP");
      try {
        await until(
          async () => (await call("GET", "/api/nodes")).json.items[0].status === "OFFLINE",
          (opts.timeoutS + 30) * 1000,
          "node offline",
        );
      } finally {
        agent.child.kill("SIGCONT");
      }
      const detectedS = (Date.now() - t0) / 1000;
      const fenced = await until(
        async () =>
          (await call("GET", `/api/events?job_id=${job.id}&type=JOB_FENCED`)).json.items[0],
        60_000,
        "JOB_FENCED reported",
      );
      assertEquals(fenced.node_id, "e2e-node");
      const second = await until(
        async () => {
          const j = (await call("GET", `/api/jobs/${job.id}`)).json;
          return j.status === "RUNNING" && j.attempt === 2 ? j : null;
        },
        60_000,
        "attempt 2 running",
      );
      await until(
        async () => (await readLedger(home, "cut", second.run_id)).points.count > 5,
        30_000,
        "attempt 2 streaming",
      );
      const done = await stopJob();
      assertEquals([done.status, done.attempt], ["SUCCEEDED", 2]);
      let overlap = "";
      try {
        overlap = await Deno.readTextFile(`${home}/cut.overlap`);
      } catch {
        // none: good
      }
      assertEquals(overlap, "", "two attempts ran at once");
      const first = await assertKilledAttemptStored(dbPath, home, job.run_id);
      const next = await assertLedgerStored(dbPath, home, second.run_id);
      // deno-lint-ignore no-console -- what this scenario measured
      console.log(
        `SIGSTOP: OFFLINE after ${
          detectedS.toFixed(1)
        } s (node_timeout_s ${opts.timeoutS}); attempt 1 lines ${first.lines} equal, points ${
          first.points.count - first.missing
        } of ${first.points.count}; attempt 2 ledger equal (points ${next.points})`,
      );
    });
  },
});
