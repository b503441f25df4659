// The agent end to end, in-process, against a fake server that speaks the wire protocol,
// with the real process runner running real `python3` jobs.
import { assert, assertEquals } from "../tests/assert.ts";
import { tfeventsPath } from "../tests/fixtures/mod.ts";
import type { DataFrame, DispatchSpec } from "../protocol/agent.ts";
import { eventually, FakeServer } from "./_fake_server.ts";
import { dispatchSpec } from "./_testing.ts";
import { resolveAgentConfig } from "./config.ts";
import { SDK_DIR } from "./job_env.ts";
import { memoryLogger } from "./log.ts";
import { type RunningAgent, startAgent } from "./start_agent.ts";
import { mergeScalars } from "./tensorboard/mod.ts";
import { type JobUser, lookupUser } from "./runner/job_user.ts";

const TORCH_LOGS = tfeventsPath("torch-logs");

interface World {
  server: FakeServer;
  /** Log lines of every agent started. */
  logs: string[];
  dir: string;
  start(): Promise<RunningAgent>;
  dispatch(spec: Partial<DispatchSpec> & { job_id: string }): DispatchSpec;
}

/** A fake server, a temp folder, and a way to start agents on it; all cleaned up after `fn`. */
async function withWorld(
  fn: (world: World) => Promise<void>,
  jobUser: JobUser | null = null,
): Promise<void> {
  const server = FakeServer.start();
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-agent-test-" });
  const agents: RunningAgent[] = [];
  const log = memoryLogger();
  const config = resolveAgentConfig(
    {},
    {
      server: server.url,
      token: "agent-token",
      "node-id": "node-test",
      "fake-gpus": 2,
      "data-dir": `${dir}/data`,
      "heartbeat-s": 0.2,
      "sample-s": 0.2,
    },
    { hostname: "test-host" },
    `${dir}/home`,
  );
  config.jobUser = jobUser;
  const world: World = {
    server,
    logs: log.lines,
    dir,
    async start() {
      const hellos = server.hellos.length;
      const agent = await startAgent(config, {
        log,
        baseEnv: Deno.env.toObject(),
        backoff: () => 100,
        watchPollMs: 200,
      });
      agents.push(agent);
      await eventually(
        "the agent's hello",
        () => server.hellos.length > hellos && server.connected,
      );
      return agent;
    },
    dispatch(overrides) {
      const spec = dispatchSpec({
        attempt: 1,
        run_id: `r-${overrides.job_id}`,
        working_dir: dir,
        ...overrides,
      });
      server.send({ type: "dispatch", job: spec });
      return spec;
    },
  };
  try {
    await fn(world);
  } finally {
    for (const agent of agents) await agent.stop();
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

const py = (code: string) => ["python3", "-c", code];

/**
 * Python lines that wait until the test creates `path`, so a job runs until the test has seen
 * what it needs; bounded, and over when the test's folder is gone.
 */
function pyWaitFor(path: string): string[] {
  return [
    "import os, time",
    `p = ${JSON.stringify(path)}`,
    "end = time.time() + 60",
    "while not os.path.exists(p) and os.path.isdir(os.path.dirname(p)) and time.time() < end:",
    "    time.sleep(0.02)",
  ];
}

function states(frames: DataFrame[], runId: string): string[] {
  return frames.flatMap((f) => f.type === "job_state" && f.run_id === runId ? [f.state] : []);
}

function logTexts(server: FakeServer, runId: string): string[] {
  return server.of("logs", runId).flatMap((f) => f.lines.map((l) => l.text));
}

function ended(server: FakeServer, runId: string): boolean {
  return states(server.applied, runId).some((s) => s !== "RUNNING");
}

Deno.test("agent says hello with its fake GPUs and runs a CPU job to its end", async () => {
  await withWorld(async ({ server, start, dispatch }) => {
    await start();
    const hello = server.hellos[0];
    assertEquals(server.authorizations[0], "Bearer agent-token");
    assertEquals([hello.node_id, hello.hostname, hello.fake_gpus], [
      "node-test",
      "test-host",
      true,
    ]);
    assertEquals(hello.gpus.map((g) => [g.index, g.fake]), [[0, true], [1, true]]);
    assert(hello.gpus[0].uuid.startsWith("GPU-fake-0-"));
    assertEquals(hello.running, []);

    dispatch({ job_id: "cpu", command: py("print(1); print(2)") });
    await eventually("the end", () => ended(server, "r-cpu"));
    assertEquals(states(server.applied, "r-cpu"), ["RUNNING", "EXITED"]);
    assertEquals(logTexts(server, "r-cpu"), ["1", "2"]);
    const end = server.of("job_state", "r-cpu").at(-1)!;
    assertEquals([end.exit_code, end.failure_class], [0, null]);
    const running = server.of("job_state", "r-cpu")[0];
    assert(typeof running.pid === "number" && running.pid > 0);
    await eventually("heartbeats", () => server.heartbeats.length >= 1);
    assertEquals(server.heartbeats[0].gpus.length, 2);
    assertEquals(server.invalid, []);
  });
});

Deno.test("agent gives a job exactly its GPUs in CUDA_VISIBLE_DEVICES", async () => {
  await withWorld(async ({ server, dir, start, dispatch }) => {
    await start();
    // The job runs until the test has seen its system metrics (a telemetry sample needs a
    // running job), then exits.
    const release = `${dir}/release-gpu`;
    dispatch({
      job_id: "gpu",
      gpu_indices: [1],
      command: py([
        "import os",
        "print(os.environ['CUDA_VISIBLE_DEVICES'], flush=True)",
        "print(os.environ['CUDA_DEVICE_ORDER'], flush=True)",
        ...pyWaitFor(release),
      ].join("\n")),
    });
    // The job holds GPU 1: its system metrics name that GPU and no other.
    const sys = await eventually("sys metrics of GPU 1", () => {
      const keys = server.of("metrics", "r-gpu").filter((f) => f.stream === "sys")
        .flatMap((f) => f.points.map((p) => p.key));
      return keys.some((k) => k.startsWith("sys/gpu")) ? keys : null;
    });
    await Deno.writeTextFile(release, "");
    const gpuKeys = [...new Set(sys.filter((k) => k.startsWith("sys/gpu")))].sort();
    assertEquals(gpuKeys, [
      "sys/gpu1/mem_used_mb",
      "sys/gpu1/power_w",
      "sys/gpu1/temp_c",
      "sys/gpu1/util",
    ]);
    await eventually("the end", () => ended(server, "r-gpu"));
    assertEquals(logTexts(server, "r-gpu"), ["1", "PCI_BUS_ID"]);
    assertEquals(states(server.applied, "r-gpu"), ["RUNNING", "EXITED"]);
  });
});

Deno.test("agent replays exactly the frames the server lacks after the server dropped it", async () => {
  await withWorld(async ({ server, logs, dir, start, dispatch }) => {
    const agent = await start();
    // Half the lines before the connection drops, half once the test has dropped it.
    const release = `${dir}/release-chatty`;
    dispatch({
      job_id: "chatty",
      command: py([
        "for i in range(20): print(i, flush=True)",
        ...pyWaitFor(release),
        "for i in range(20, 40):",
        "    print(i, flush=True)",
        "    time.sleep(0.01)",
      ].join("\n")),
    });
    await eventually("first lines", () => logTexts(server, "r-chatty").length > 0);
    server.refuse = true;
    const requests = server.authorizations.length;
    await server.dropConnection();
    await Deno.writeTextFile(release, "");
    await eventually(
      "frames spooled while the server refuses the agent",
      () =>
        server.authorizations.length > requests && agent.spool.newest("data") > server.cursors.data,
    );
    server.refuse = false;
    await eventually("the end", () => ended(server, "r-chatty"));
    assert(server.hellos.length >= 2, "the agent reconnected");
    assert(
      logs.some((l) => l.includes("replayed spooled frames")),
      "frames spooled meanwhile were replayed",
    );
    for (const stream of ["data", "sys"] as const) {
      const seqs = server.applied.filter((f) => f.stream === stream).map((f) => f.seq);
      assertEquals(
        seqs,
        Array.from({ length: seqs.length }, (_, i) => i + 1),
        `${stream}: no gaps`,
      );
    }
    assertEquals(server.ignored, [], "nothing the server already had was replayed");
    assertEquals(logTexts(server, "r-chatty"), Array.from({ length: 40 }, (_, i) => String(i)));
  });
});

Deno.test("agent forwards what a job logs with the Python SDK", async () => {
  await withWorld(async ({ server, start, dispatch }) => {
    await start();
    dispatch({
      job_id: "sdk",
      command: py("from gpuctl import run; run.log({'loss': 1.0}, step=1)"),
    });
    await eventually("the end", () => ended(server, "r-sdk"));
    const points = server.of("sdk", "r-sdk").flatMap((f) => f.batch.points ?? []);
    assertEquals(points.map((p) => [p.key, p.step, p.value]), [["loss", 1, 1]]);
    const order = server.applied.filter((f) => "run_id" in f && f.run_id === "r-sdk").map((f) =>
      f.type
    );
    assert(order.indexOf("sdk") < order.lastIndexOf("job_state"), "SDK data comes before the end");
  });
});

Deno.test("agent takes what a job's SDK could not send before it exited, once, ahead of the end", async () => {
  await withWorld(async ({ server, start, dispatch }) => {
    await start();
    // The script cannot reach the agent (as while the agent is restarting) and exits first.
    const script = [
      "import os",
      "os.environ['GPUCTL_INGEST_URL'] = 'http+unix://%2Fnonexistent%2Fingest.sock/runs/x'",
      "from gpuctl import run",
      "for step in range(300): run.log({'loss': float(step)}, step=step)",
      "run.log_checkpoint('/ckpt-299.pt', step=299)",
      "run.finish(timeout=0.2)",
    ].join("\n");
    dispatch({ job_id: "late", command: py(script) });
    await eventually("the end", () => ended(server, "r-late"));
    const frames = server.of("sdk", "r-late");
    const steps = frames.flatMap((f) => f.batch.points ?? []).map((p) => p.step);
    assertEquals(steps, Array.from({ length: 300 }, (_, i) => i));
    assertEquals(frames.flatMap((f) => f.batch.checkpoints ?? []).map((c) => c.path), [
      "/ckpt-299.pt",
    ]);
    assert(frames.every((f) => f.batch.status === undefined), "the job's end decides the status");
    const order = server.applied.filter((f) => "run_id" in f && f.run_id === "r-late").map((f) =>
      f.type
    );
    assert(order.lastIndexOf("sdk") < order.lastIndexOf("job_state"), "before the end");
  });
});

Deno.test({
  name: "a job run as another user reaches the ingest socket and writes its run's folder" +
    (Deno.uid() === 0 ? "" : " (skipped: needs the tests to run as root)"),
  ignore: Deno.uid() !== 0,
  async fn() {
    const nobody = lookupUser("nobody")!;
    await withWorld(async ({ server, start, dispatch, dir }) => {
      await start();
      await Deno.chmod(dir, 0o777);
      // The checkout may sit in a folder the job user cannot enter (a clone under a private
      // temp dir): the job then imports a copy of the SDK from the world's open folder, which
      // its PYTHONPATH lists after the checkout's.
      const sdkCopy = `${dir}/sdk-python`;
      await new Deno.Command("cp", { args: ["-r", SDK_DIR!, sdkCopy] }).output();
      await new Deno.Command("chmod", { args: ["-R", "a+rX", sdkCopy] }).output();
      const script = [
        "import os",
        "from gpuctl import run",
        "run.log({'loss': 1.0}, step=1)",
        "open(os.path.join(os.environ['GPUCTL_RUN_DIR'], 'ckpt.pt'), 'w').write('x')",
        "run.finish()",
      ].join("\n");
      dispatch({ job_id: "other", command: py(script), env: { PYTHONPATH: sdkCopy } });
      await eventually("the end", () => ended(server, "r-other"));
      const points = server.of("sdk", "r-other").flatMap((f) => f.batch.points ?? []);
      assertEquals(points.map((p) => [p.key, p.step]), [["loss", 1]]);
      const written = await Deno.stat(`${dir}/.gpuctl-runs/r-other/ckpt.pt`);
      assertEquals(written.uid, nobody.uid);
    }, nobody);
  },
});

Deno.test("agent tails a job's TensorBoard folder while it runs", async () => {
  await withWorld(async ({ server, dir, start, dispatch }) => {
    await start();
    // The job writes its event files, then runs until the test has seen their scalars.
    const release = `${dir}/release-tb`;
    dispatch({
      job_id: "tb",
      env: { FIXTURES: TORCH_LOGS },
      command: py([
        "import os, shutil",
        "src = os.environ['FIXTURES']",
        "os.makedirs('runs-tb', exist_ok=True)",
        "for name in sorted(os.listdir(src)): shutil.copy(os.path.join(src, name), 'runs-tb')",
        ...pyWaitFor(release),
      ].join("\n")),
      tensorboard_dir: "runs-tb",
    });
    const tensorboard = () => server.of("metrics", "r-tb").filter((f) => f.stream === "data");
    await eventually("metrics while the job runs", () => tensorboard().length > 0);
    assertEquals(ended(server, "r-tb"), false);
    await Deno.writeTextFile(release, "");
    await eventually("the end", () => ended(server, "r-tb"));
    const points = tensorboard()
      .flatMap((f) =>
        f.points.map((p) => ({ tag: p.key, step: p.step, value: p.value, wall_time: 0 }))
      );
    const merged = mergeScalars(points);
    assertEquals(
      merged.map((p) => [p.tag, p.step, p.value]),
      Array.from({ length: 100 }, (_, step) => ["y=x", step, 2 * step]),
    );
  });
});

Deno.test("agent cancels a job at the server's request", async () => {
  await withWorld(async ({ server, start, dispatch }) => {
    await start();
    dispatch({ job_id: "sleepy", command: ["sleep", "30"] });
    await eventually("RUNNING", () => states(server.applied, "r-sleepy").includes("RUNNING"));
    server.send({ type: "cancel", job_id: "sleepy", attempt: 1, grace_s: 1, reason: "user" });
    await eventually("the end", () => ended(server, "r-sleepy"));
    assertEquals(states(server.applied, "r-sleepy"), ["RUNNING", "CANCELLED"]);
  });
});

Deno.test("a restarted agent reattaches to the job the old one left running", async () => {
  await withWorld(async ({ server, dir, start, dispatch }) => {
    const first = await start();
    // Half the lines under the first agent; the rest once the second one has taken over.
    const release = `${dir}/release-long`;
    dispatch({
      job_id: "long",
      command: py([
        "for i in range(15): print(i, flush=True)",
        ...pyWaitFor(release),
        "for i in range(15, 30):",
        "    print(i, flush=True)",
        "    time.sleep(0.01)",
      ].join("\n")),
    });
    await eventually("first lines", () => logTexts(server, "r-long").length > 0);
    await first.stop();
    const second = await start();
    assertEquals(server.hellos[1].running.map((r) => [r.job_id, r.run_id]), [["long", "r-long"]]);
    await Deno.writeTextFile(release, "");
    await eventually("the end", () => ended(server, "r-long"));
    assertEquals(states(server.applied, "r-long"), ["RUNNING", "EXITED"]);
    assertEquals(logTexts(server, "r-long"), Array.from({ length: 30 }, (_, i) => String(i)));
    assertEquals(server.of("job_state", "r-long").at(-1)!.exit_code, 0);
    assertEquals(second.jobs.running(), []);
  });
});
