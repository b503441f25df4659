/**
 * End to end with a real (one-node, fake-GPU) Slurm cluster: `deno task server`, `deno task
 * agent --runner slurm` on the submit host, and jobs that sbatch hands to slurmd.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import {
  alive,
  api,
  logText,
  nodeOnline,
  type Proc,
  spawnDeno,
  startServerProcess,
  taskArgs,
  until,
  waitJob,
} from "./_processes.ts";
import { slurmTest, startTestCluster, type TestCluster } from "./slurm/_cluster.ts";

const py = (code: string) => ["python3", "-c", code];
type Call = ReturnType<typeof api>;

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

async function points(call: Call, runId: string, key: string): Promise<number[]> {
  const res = await call("POST", "/api/runs/metrics:query", { runs: [runId], keys: [key] });
  return res.json.series[0]?.steps ?? [];
}

/** A server, a test cluster and a Slurm agent on it, in one temp dir. */
async function startAll() {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-e2e-slurm-" });
  const slurm = await startTestCluster(4);
  await Deno.mkdir(`${home}/server`);
  const server = await startServerProcess(`${home}/server`);
  const ingestPort = freePort();
  await Deno.mkdir(`${home}/agent-home`);
  await Deno.writeTextFile(
    `${home}/agent-home/agent.yaml`,
    [
      "runner: slurm",
      "slurm:",
      "  partition: debug",
      "  poll_s: 0.3",
      "ingest_host: 127.0.0.1",
      `ingest_port: ${ingestPort}`,
      "",
    ].join("\n"),
  );
  const startAgent = () =>
    spawnDeno([
      ...taskArgs("agent"),
      "--server",
      server.url,
      "--token",
      server.agentToken,
      "--data-dir",
      `${home}/agent`,
      "--node-id",
      "slurm-debug",
      "--heartbeat-s",
      "1",
      "--sample-s",
      "1",
    ], { GPUCTL_HOME: `${home}/agent-home`, ...slurm.env });
  const call = api(server.url, server.adminToken);
  const agent: { proc: Proc } = { proc: startAgent() };
  return {
    home,
    slurm,
    call,
    agent,
    startAgent,
    async stop() {
      await agent.proc.kill("SIGTERM");
      await server.proc.kill("SIGTERM");
      await slurm.stop();
      await Deno.remove(home, { recursive: true }).catch(() => {});
    },
  };
}

/** The Slurm job ids squeue still lists. */
async function squeueIds(slurm: TestCluster): Promise<string[]> {
  return (await slurm.run("squeue", "-h", "-o", "%i")).split("\n").map((s) => s.trim()).filter(
    Boolean,
  );
}

Deno.test(slurmTest("a Slurm agent hands jobs to Slurm and reports them back"), async (t) => {
  const c = await startAll();
  const { call } = c;
  try {
    await nodeOnline(call).catch((err) => {
      throw new Error(`${err.message}; agent output:\n${c.agent.proc.output().slice(-3000)}`);
    });

    await t.step("the agent reports the partition as one Slurm pool with its GPUs", async () => {
      const node = (await call("GET", "/api/nodes")).json.items[0];
      assertEquals(node.id, "slurm-debug");
      assertEquals(node.pool, { kind: "slurm", partition: "debug" });
      assertEquals(node.gpus.length, 4);
    });

    await t.step(
      "three 2-GPU jobs on 4 GPUs: two run on disjoint GPUs, the third waits with Slurm's reason, then runs; logs and SDK metrics arrive",
      async () => {
        const code = [
          "import os, time",
          "from gpuctl import run",
          "print('CVD=' + os.environ.get('CUDA_VISIBLE_DEVICES', '?'), flush=True)",
          "for step in range(5):",
          "    run.log({'train/loss': 1.0 / (step + 1)}, step=step)",
          "    time.sleep(0.6)",
          "run.finish()",
        ].join("\n");
        const ids: string[] = [];
        for (const name of ["s1", "s2", "s3"]) {
          const res = await call("POST", "/api/jobs", {
            name,
            command: py(code),
            working_dir: c.home,
            gpus: 2,
          });
          assertEquals(res.status, 201, res.text);
          ids.push(res.json.id);
        }
        // While two run, the third is DISPATCHED to the pool and waits in Slurm's queue.
        const waiting = await until(
          async () => {
            const jobs = await Promise.all(
              ids.map(async (id) => (await call("GET", `/api/jobs/${id}`)).json),
            );
            const running = jobs.filter((j) => j.status === "RUNNING");
            const pending = jobs.filter((j) =>
              j.status === "DISPATCHED" && /^Slurm: pending \(Resources\)/.test(j.reason ?? "")
            );
            return running.length === 2 && pending.length === 1 ? pending[0] : null;
          },
          60_000,
          "two jobs RUNNING and one DISPATCHED, pending on Resources",
        );
        assertEquals(waiting.node_id, "slurm-debug");
        const pendingRun = (await call("GET", `/api/runs/${waiting.run_id}`)).json;
        assert(/^\d+$/.test(pendingRun.slurm?.job_id ?? ""), JSON.stringify(pendingRun));

        const jobs = [];
        for (const id of ids) {
          jobs.push(await waitJob(call, id, ["SUCCEEDED", "FAILED", "CANCELLED"], 90_000));
        }
        assertEquals(
          jobs.map((j) => j.status),
          ["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"],
          JSON.stringify(jobs),
        );
        const t0 = (s: string) => Date.parse(s);
        const [first, second] = [...jobs].sort((a, b) => t0(a.started_at) - t0(b.started_at));
        const third = [...jobs].sort((a, b) => t0(a.started_at) - t0(b.started_at))[2];
        assert(
          t0(first.started_at) < t0(second.finished_at) &&
            t0(second.started_at) < t0(first.finished_at),
        );
        assertEquals(
          new Set([first.gpu_indices.join(","), second.gpu_indices.join(",")]),
          new Set(["0,1", "2,3"]),
        );
        assert(
          t0(third.started_at) >= Math.min(t0(first.finished_at), t0(second.finished_at)) - 1000,
        );
        for (const job of jobs) {
          // The GPUs Slurm bound are the ones the job saw, and the job shows them.
          assertEquals(await logText(call, job.run_id), [`CVD=${job.gpu_indices.join(",")}`]);
          assertEquals(await points(call, job.run_id, "train/loss"), [0, 1, 2, 3, 4]);
          const run = (await call("GET", `/api/runs/${job.run_id}`)).json;
          assertEquals(run.slurm.node, (await c.slurm.run("hostname", "-s")).trim());
        }
      },
    );

    await t.step("exit 3 fails with EXIT_CODE; an OOM traceback fails with OOM", async () => {
      const exit3 = (await call("POST", "/api/jobs", {
        name: "exit3",
        command: py("import sys; print('bye'); sys.exit(3)"),
        working_dir: c.home,
        gpus: 1,
      })).json.id;
      const oom = (await call("POST", "/api/jobs", {
        name: "oom",
        command: py(
          "import sys; print('Traceback (most recent call last):', file=sys.stderr); " +
            "print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 GiB', file=sys.stderr); sys.exit(1)",
        ),
        working_dir: c.home,
        gpus: 1,
      })).json.id;
      const a = await waitJob(call, exit3, ["SUCCEEDED", "FAILED"], 90_000);
      assertEquals([a.status, a.failure_class, a.exit_code], ["FAILED", "EXIT_CODE", 3]);
      const b = await waitJob(call, oom, ["SUCCEEDED", "FAILED"], 90_000);
      assertEquals([b.status, b.failure_class], ["FAILED", "OOM"]);
      assertStringIncludes(b.reason, "CUDA out of memory");
    });

    await t.step("a cancelled job leaves nothing in squeue and no process", async () => {
      const id = (await call("POST", "/api/jobs", {
        name: "long",
        command: py("import os, time; print('PID=%d' % os.getpid(), flush=True); time.sleep(600)"),
        working_dir: c.home,
        gpus: 1,
        grace_s: 2,
      })).json.id;
      const job = await waitJob(call, id, ["RUNNING"], 90_000);
      const pid = await until(
        async () => {
          const line = (await logText(call, job.run_id)).find((l) => l.startsWith("PID="));
          return line ? Number(line.slice(4)) : 0;
        },
        30_000,
        "the job's pid in its log",
      );
      assert(alive(pid));
      const slurmId = (await call("GET", `/api/runs/${job.run_id}`)).json.slurm.job_id;
      assertEquals((await call("POST", `/api/jobs/${id}/cancel`, {})).status, 200);
      const ended = await waitJob(call, id, ["CANCELLED", "FAILED", "SUCCEEDED"], 90_000);
      assertEquals(ended.status, "CANCELLED");
      assert(!(await squeueIds(c.slurm)).includes(slurmId), "the Slurm job is still in squeue");
      assert(!alive(pid), `process ${pid} outlived the cancel`);
    });

    await t.step(
      "a job cancelled in Slurm by someone else ends CANCELLED and says so",
      async () => {
        const id = (await call("POST", "/api/jobs", {
          name: "theirs",
          command: py("import time; print('working', flush=True); time.sleep(600)"),
          working_dir: c.home,
          gpus: 1,
        })).json.id;
        const job = await waitJob(call, id, ["RUNNING"], 90_000);
        const slurmId = (await call("GET", `/api/runs/${job.run_id}`)).json.slurm.job_id;
        await c.slurm.run("scancel", slurmId);
        const ended = await waitJob(call, id, ["CANCELLED", "FAILED", "SUCCEEDED"], 90_000);
        assertEquals([ended.status, ended.failure_class], ["CANCELLED", "CANCELLED"]);
        assertStringIncludes(ended.reason, "cancelled in Slurm");
      },
    );

    await t.step(
      "an agent restarted while its job waits in Slurm's queue reattaches to it pending",
      async () => {
        const code = "import time; print('ran', flush=True); time.sleep(3)";
        const ids: string[] = [];
        for (const name of ["all-gpus", "after-it"]) {
          ids.push(
            (await call("POST", "/api/jobs", {
              name,
              command: py(code),
              working_dir: c.home,
              gpus: 4,
            })).json.id,
          );
        }
        const pending = await until(
          async () => {
            const j = (await call("GET", `/api/jobs/${ids[1]}`)).json;
            return j.status === "DISPATCHED" && /^Slurm: pending/.test(j.reason ?? "") ? j : null;
          },
          30_000,
          "the second job pending in Slurm",
        );
        const slurmId = (await call("GET", `/api/runs/${pending.run_id}`)).json.slurm.job_id;
        await c.agent.proc.kill("SIGTERM");
        c.agent.proc = c.startAgent();
        const ended = await waitJob(
          call,
          ids[1],
          ["SUCCEEDED", "FAILED", "CANCELLED", "LOST"],
          90_000,
        );
        assertEquals([ended.status, ended.attempt], ["SUCCEEDED", 1], JSON.stringify(ended));
        assertEquals((await call("GET", `/api/runs/${ended.run_id}`)).json.slurm.job_id, slurmId);
        assertEquals(await logText(call, ended.run_id), ["ran"]);
        assertEquals(
          (await waitJob(call, ids[0], ["SUCCEEDED", "FAILED"], 90_000)).status,
          "SUCCEEDED",
        );
      },
    );

    await t.step(
      "the agent restarted mid-job reattaches to its Slurm job; the run ends with all its points",
      async () => {
        const code = [
          "import time",
          "from gpuctl import run",
          "import os",
          "os.makedirs('ckpt-restart', exist_ok=True)",
          "for step in range(30):",
          "    run.log({'loss': 1.0 / (step + 1)}, step=step)",
          "    print('step', step, flush=True)",
          "    if step in (10, 20):",
          "        open('ckpt-restart/ckpt-%d.pt' % step, 'wb').write(b'weights')",
          "    time.sleep(0.25)",
          "run.finish()",
        ].join("\n");
        const id = (await call("POST", "/api/jobs", {
          name: "restart",
          command: py(code),
          working_dir: c.home,
          gpus: 2,
          // Found on the working dir, as on a cluster's shared filesystem.
          checkpoint_dir: "ckpt-restart",
        })).json.id;
        const job = await waitJob(call, id, ["RUNNING"], 90_000);
        const slurmId = (await call("GET", `/api/runs/${job.run_id}`)).json.slurm.job_id;
        await until(
          async () => (await points(call, job.run_id, "loss")).length >= 3,
          30_000,
          "first points",
        );
        await c.agent.proc.kill("SIGKILL");
        c.agent.proc = c.startAgent();
        const ended = await waitJob(call, id, ["SUCCEEDED", "FAILED", "CANCELLED", "LOST"], 90_000);
        assertEquals([ended.status, ended.attempt], ["SUCCEEDED", 1], JSON.stringify(ended));
        assertEquals((await call("GET", `/api/runs/${job.run_id}`)).json.slurm.job_id, slurmId);
        assertEquals(
          await points(call, job.run_id, "loss"),
          Array.from({ length: 30 }, (_, i) => i),
        );
        const lines = await logText(call, job.run_id);
        assertEquals(lines, Array.from({ length: 30 }, (_, i) => `step ${i}`));
        const checkpoints = (await call("GET", `/api/runs/${job.run_id}/checkpoints`)).json.items;
        assertEquals(checkpoints.map((k: { step: number }) => k.step).sort(), [10, 20]);
        // Reattached, not submitted again: Slurm ran one job for it.
        const name = `gpuctl-${job.run_id}`;
        assertEquals(
          (await c.slurm.run("scontrol", "show", "job", "-o")).split("\n").filter((l) =>
            l.includes(`JobName=${name} `)
          ).length,
          1,
        );
      },
    );
  } finally {
    await c.stop();
  }
});
