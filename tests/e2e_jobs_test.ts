/**
 * End to end with real processes: `deno task server`, `deno task agent --fake-gpus 2`, and
 * real child processes as jobs.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { alive, logText, startCluster, until, waitJob } from "./_processes.ts";

async function cluster(fakeGpus = 2) {
  return await startCluster({ fakeGpus });
}

const py = (code: string) => ["python3", "-c", code];

Deno.test("two GPU jobs run side by side on distinct fake GPUs, the third waits; a CPU job shows its log", async () => {
  const c = await cluster();
  try {
    const code =
      "import os, time; print('CVD=' + os.environ['CUDA_VISIBLE_DEVICES'], flush=True); time.sleep(2)";
    const ids: string[] = [];
    for (const n of ["g1", "g2", "g3"]) {
      ids.push(
        (await c.call("POST", "/api/jobs", {
          name: n,
          command: py(code),
          working_dir: c.home,
          gpus: 1,
        })).json.id,
      );
    }
    const cpu = (await c.call("POST", "/api/jobs", {
      name: "cpu",
      command: py(
        "import os; print('hello from cpu, CVD=[' + os.environ['CUDA_VISIBLE_DEVICES'] + ']')",
      ),
      working_dir: c.home,
      gpus: 0,
    })).json.id;
    const jobs = [];
    for (const id of ids) jobs.push(await waitJob(c.call, id, ["SUCCEEDED", "FAILED"], 60_000));
    assertEquals(jobs.map((j) => j.status), ["SUCCEEDED", "SUCCEEDED", "SUCCEEDED"]);
    const devices = [];
    for (const j of jobs) devices.push((await logText(c.call, j.run_id)).join("\n"));
    assertEquals(new Set([devices[0], devices[1]]), new Set(["CVD=0", "CVD=1"]));
    assertEquals(jobs.map((j) => j.gpu_indices.length), [1, 1, 1]);
    // The first two overlapped; the third started only after one of them finished.
    const t = (s: string) => Date.parse(s);
    assert(
      t(jobs[0].started_at) < t(jobs[1].finished_at) &&
        t(jobs[1].started_at) < t(jobs[0].finished_at),
    );
    assert(t(jobs[2].started_at) >= Math.min(t(jobs[0].finished_at), t(jobs[1].finished_at)) - 50);

    const cpuJob = await waitJob(c.call, cpu, ["SUCCEEDED", "FAILED"]);
    assertEquals(cpuJob.status, "SUCCEEDED");
    assertEquals(await logText(c.call, cpuJob.run_id), ["hello from cpu, CVD=[]"]);
    const node = (await c.call("GET", "/api/nodes")).json.items[0];
    assertEquals([node.fake_gpus, node.gpus.length], [true, 2]);
  } finally {
    await c.stop();
  }
});

Deno.test("exit 1 fails with EXIT_CODE, a CUDA OOM fails with OOM and an event; neither is retried until asked", async () => {
  const c = await cluster();
  try {
    const exit1 = (await c.call("POST", "/api/jobs", {
      name: "exit1",
      command: py("import sys; print('bad config'); sys.exit(1)"),
      working_dir: c.home,
      gpus: 1,
    })).json.id;
    const oom = (await c.call("POST", "/api/jobs", {
      name: "oom",
      command: py(
        "import sys; print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB', file=sys.stderr); sys.exit(1)",
      ),
      working_dir: c.home,
      gpus: 1,
    })).json.id;
    const a = await waitJob(c.call, exit1, ["FAILED"]);
    assertEquals([a.failure_class, a.exit_code, a.attempt], ["EXIT_CODE", 1, 1]);
    const b = await waitJob(c.call, oom, ["FAILED"]);
    assertEquals([b.failure_class, b.attempt], ["OOM", 1]);
    const events = (await c.call("GET", `/api/events?job_id=${oom}&type=OOM`)).json.items;
    assertEquals(events.length, 1);

    const retried = await c.call("POST", `/api/jobs/${oom}/retry`);
    assertEquals(retried.json.attempt, 2);
    const again = await waitJob(c.call, oom, ["FAILED"]);
    assertEquals(again.attempt, 2);
    assert(again.run_id !== b.run_id, "a retry is a new run");
    const runs = (await c.call("GET", `/api/runs?job_id=${oom}`)).json.items;
    assertEquals(runs.map((r: { attempt: number }) => r.attempt).sort(), [1, 2]);
    const failure = (await c.call("GET", `/api/runs/${again.run_id}/failure`)).json;
    assertStringIncludes(failure.likely_cause.toLowerCase(), "out of memory");
  } finally {
    await c.stop();
  }
});

Deno.test("cancelling a process tree leaves no process of it alive", async () => {
  const c = await cluster();
  try {
    const pidFile = `${c.home}/pids`;
    // A child that ignores SIGTERM, and a grandchild that escapes the group with setsid.
    const script = `
      echo $$ >> ${pidFile}
      (trap '' TERM; while true; do sleep 0.2; done) & echo $! >> ${pidFile}
      setsid bash -c 'echo $$ >> ${pidFile}; while true; do sleep 0.2; done' &
      echo started
      wait
    `;
    const id = (await c.call("POST", "/api/jobs", {
      name: "tree",
      command: script,
      shell: true,
      working_dir: c.home,
      gpus: 0,
      grace_s: 1,
    })).json.id;
    await waitJob(c.call, id, ["RUNNING"]);
    const pids = (await until(
      async () => {
        try {
          const list = (await Deno.readTextFile(pidFile)).trim().split("\n").map(Number);
          return list.length >= 3 ? list : null;
        } catch {
          return null;
        }
      },
      20_000,
      "the tree started",
    )) as number[];
    assert(pids.every(alive));
    await c.call("POST", `/api/jobs/${id}/cancel`);
    const done = await waitJob(c.call, id, ["CANCELLED", "FAILED", "SUCCEEDED"]);
    assertEquals([done.status, done.failure_class], ["CANCELLED", "CANCELLED"]);
    await until(() => pids.every((p) => !alive(p)), 10_000, "every process of the tree gone");
  } finally {
    await c.stop();
  }
});

Deno.test("priorities reorder the queue, and a 2-GPU job is not starved by a stream of 1-GPU jobs", async () => {
  const c = await cluster();
  try {
    // Jobs that hold their GPU until the test opens their gate: no race with a timer.
    const gated = (gate: string) =>
      py(`import os, time\nwhile not os.path.exists(${JSON.stringify(gate)}): time.sleep(0.05)`);
    const gate = (name: string) => `${c.home}/gate-${name}`;
    const open = (name: string) => Deno.writeTextFile(gate(name), "");
    const submit = async (name: string, gpus: number, priority: number) =>
      (await c.call("POST", "/api/jobs", {
        name,
        command: gated(gate(name)),
        working_dir: c.home,
        gpus,
        priority,
      })).json.id as string;
    const status = async (id: string) => (await c.call("GET", `/api/jobs/${id}`)).json.status;

    // Both GPUs busy; then a low and a high priority job queue up behind them.
    const busy = [await submit("busy-a", 1, 0), await submit("busy-b", 1, 0)];
    for (const id of busy) await waitJob(c.call, id, ["RUNNING"], 30_000);
    const low = await submit("low", 1, 0);
    const high = await submit("high", 1, 10);
    assertEquals([await status(low), await status(high)], ["QUEUED", "QUEUED"]);
    // One GPU comes free: the high-priority job takes it although it was submitted later.
    await open("busy-a");
    await waitJob(c.call, high, ["RUNNING"], 30_000);
    assertEquals(await status(low), "QUEUED", "the low-priority job still waits");
    for (const name of ["busy-b", "low", "high"]) await open(name);
    for (const id of [...busy, low, high]) await waitJob(c.call, id, ["SUCCEEDED"], 30_000);

    // A 2-GPU job behind a stream of 1-GPU jobs: it reserves the node and starts as soon as
    // both GPUs are free, before 1-GPU jobs submitted after it.
    const first = await submit("stream-0", 1, 0);
    await waitJob(c.call, first, ["RUNNING"], 30_000);
    const big = await submit("big", 2, 0);
    const later: string[] = [];
    for (let i = 1; i <= 4; i++) later.push(await submit(`stream-${i}`, 1, 0));
    // A GPU is free, yet no later 1-GPU job takes it while the 2-GPU job waits.
    for (const id of later) assertEquals(await status(id), "QUEUED");
    await open("stream-0");
    const b = await waitJob(c.call, big, ["RUNNING"], 30_000);
    assertEquals(b.gpu_indices.length, 2);
    for (const id of later) assertEquals(await status(id), "QUEUED", "no 1-GPU job jumped ahead");
    await open("big");
    for (let i = 1; i <= 4; i++) await open(`stream-${i}`);
    await waitJob(c.call, big, ["SUCCEEDED"], 30_000);
    const others = [];
    for (const id of later) others.push(await waitJob(c.call, id, ["SUCCEEDED"], 60_000));
    for (const o of others) {
      assert(
        Date.parse(o.started_at) >= Date.parse(b.started_at),
        `${o.name} did not jump ahead of the 2-GPU job`,
      );
    }
  } finally {
    await c.stop();
  }
});
