/**
 * The Docker runner against a real Docker engine (a private dockerd, tests/_dockerd.ts): the
 * runner conformance suite the process runner passes, and what only a real engine shows —
 * PID 1 and signals, the container's own cgroup (memory limit, OOMKilled), docker's own exit
 * statuses 125–127, files written as root in a bind mount, and containers that outlive a
 * killed agent.
 */
import assert from "node:assert/strict";
import { containerName, createDockerRunner } from "../agent/runner/docker_runner.ts";
import { runnerConformance } from "../agent/runner/runner_conformance.ts";
import type { ExitInfo, OutputLine, RunSpec } from "../agent/runner/types.ts";
import { diagnoseFailure } from "../server/failure/mod.ts";
import { dockerMissing, hostPidsOf, startEngine, type TestEngine } from "./_dockerd.ts";

const missing = dockerMissing();
const skip = missing !== null && Deno.env.get("CI") !== "true";
const engine: TestEngine | null = skip ? null : await startEngine();

/** The agent's environment: the docker CLI reaches the private engine. */
const agentEnv = (e: TestEngine) => ({ ...Deno.env.toObject(), ...e.env });

/** The containers of these runs still in `docker ps -a`. */
async function leftOf(e: TestEngine, runIds: string[]): Promise<string[]> {
  const names = new Set(runIds.map(containerName));
  return (await e.containers()).filter((name) => names.has(name));
}

if (engine === null) {
  Deno.test(
    { name: `docker runner on a real engine (skipped: ${missing})`, ignore: true },
    () => {},
  );
} else {
  const e = engine;
  runnerConformance({
    kind: "docker",
    // No NVIDIA container runtime here: the suite's GPU jobs run as on fake GPUs.
    makeRunner: () => createDockerRunner({ baseEnv: agentEnv(e), gpus: false }),
    image: e.image,
    hostPids: (pids) => hostPidsOf(e, pids),
    async assertNothingLeft(runIds) {
      assert.deepEqual(await leftOf(e, runIds), [], "containers left in docker ps -a");
    },
    async cleanup(runIds) {
      for (const name of await leftOf(e, runIds)) await e.docker("rm", "--force", name);
    },
  });
  dockerOnlyTests(e);
}

function dockerOnlyTests(e: TestEngine): void {
  const spec = (dir: string, extra: Partial<RunSpec> = {}): RunSpec => {
    const runId = `d${crypto.randomUUID().slice(0, 8)}`;
    return {
      run_id: runId,
      job_id: "j-docker",
      attempt: 1,
      command: ["python3", "-c", "print('hi')"],
      shell: false,
      working_dir: dir,
      env: {},
      gpu_indices: [],
      runner: "docker",
      image: e.image,
      run_dir: `${dir}/runs/${runId}`,
      grace_s: 1,
      ...extra,
    };
  };

  /** A temp working dir and the runs started in it; removes what is left afterwards. */
  const test = (
    name: string,
    fn: (t: { dir: string; specs: RunSpec[]; spec: typeof spec }) => Promise<void>,
  ) =>
    Deno.test(`docker runner on a real engine: ${name}`, async () => {
      const dir = await Deno.makeTempDir({ prefix: "gpuctl_docker_" });
      const specs: RunSpec[] = [];
      try {
        await fn({
          dir,
          specs,
          spec: (d, extra) => {
            const s = spec(d, extra);
            specs.push(s);
            return s;
          },
        });
        assert.deepEqual(await leftOf(e, specs.map((s) => s.run_id)), [], "docker ps -a");
      } finally {
        for (const name of await leftOf(e, specs.map((s) => s.run_id))) {
          await e.docker("rm", "--force", name);
        }
        await Deno.remove(dir, { recursive: true }).catch(() => {});
      }
    });

  const runner = (extra: Parameters<typeof createDockerRunner>[0] = {}) =>
    createDockerRunner({ baseEnv: agentEnv(e), ...extra });

  async function runToEnd(s: RunSpec, r = runner()) {
    const lines: OutputLine[] = [];
    const handle = await r.start(s, { onLine: (l) => void lines.push(l) });
    const exit = await handle.exited;
    return { exit, texts: lines.map((l) => l.text), handle };
  }

  async function waitFor(what: string, check: () => boolean | Promise<boolean>, ms = 15_000) {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`Timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  test("a job's secret reaches the container through --env-file, never a command line", async (t) => {
    const s = t.spec(t.dir, {
      command: ["bash", "-c", 'echo "token=$HF_TOKEN"; exec sleep 30'],
      env: { HF_TOKEN: "hf_secret_not_on_argv" },
    });
    const lines: string[] = [];
    const handle = await runner().start(s, { onLine: (l) => void lines.push(l.text) });
    try {
      await waitFor("the job's line", () => lines.length === 1);
      assert.deepEqual(lines, ["token=hf_secret_not_on_argv"]);
      // The wrapper, the docker client and the container's sleep.
      await waitFor("the container's processes", () => handle.pids().length >= 3);
      const cmdlines = handle.pids().map((pid) =>
        Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ")
      );
      for (const cmdline of cmdlines) assert.equal(cmdline.includes("hf_secret"), false, cmdline);
      assert.ok(cmdlines.some((c) => / run .*--env-file /.test(c)), cmdlines.join("\n"));
    } finally {
      await handle.cancel(0);
    }
    const files = [...Deno.readDirSync(s.run_dir)].map((f) => f.name);
    assert.equal(files.includes("docker.env"), false, "the variables file is gone at the end");
  });

  test("cancel sends SIGTERM to the container's PID 1: a training script that handles it saves and exits", async (t) => {
    const script = [
      "import signal, sys, time",
      "def stop(signum, frame):",
      "    print(f'got signal {signum} as pid 1, saving', flush=True)",
      "    sys.exit(0)",
      "signal.signal(signal.SIGTERM, stop)",
      "print('training', flush=True)",
      "while True: time.sleep(0.05)",
    ].join("\n");
    const s = t.spec(t.dir, { command: ["python3", "-c", script], grace_s: 30 });
    const lines: string[] = [];
    const handle = await runner().start(s, { onLine: (l) => void lines.push(l.text) });
    await waitFor("training", () => lines.includes("training"));
    await handle.cancel(30);
    const exit = await handle.exited;
    assert.equal(exit.failure_class, "CANCELLED");
    assert.deepEqual(lines, ["training", "got signal 15 as pid 1, saving"]);
    assert.deepEqual([exit.exit_code, exit.signal], [0, null]);
  });

  test("cancel of a PID 1 that ignores SIGTERM kills it after grace_s", async (t) => {
    // Python as PID 1 with no handler: the kernel drops SIGTERM for a namespace's init.
    const s = t.spec(t.dir, {
      command: ["python3", "-c", "import time\nprint('up', flush=True)\nwhile True: time.sleep(1)"],
    });
    const lines: string[] = [];
    const handle = await runner().start(s, { onLine: (l) => void lines.push(l.text) });
    await waitFor("up", () => lines.includes("up"));
    await handle.cancel(0.5);
    const exit = await handle.exited;
    assert.deepEqual([exit.failure_class, exit.signal], ["CANCELLED", "SIGKILL"]);
  });

  test("a missing image is DISPATCH_FAILED, and its card says to build or load it on the node", async (t) => {
    const s = t.spec(t.dir, { image: "gpuctl-test/not-here:1" });
    const { exit } = await runToEnd(s);
    assert.deepEqual([exit.failure_class, exit.exit_code], ["DISPATCH_FAILED", 125]);
    assert.equal(
      exit.reason,
      'image "gpuctl-test/not-here:1" is not on this node and could not be pulled: build it ' +
        "there (docker build -t gpuctl-test/not-here:1 .) or load it (docker load -i FILE)",
    );
    assert.ok(
      exit.log_tail.some((l) => l.includes("Unable to find image")),
      exit.log_tail.join("\n"),
    );
    const card = diagnose(exit);
    assert.equal(card.cause_id, "dispatch_failed");
    assert.match(card.likely_cause, /build it there .* or load it/);
  });

  test("a container killed at its --memory limit is OOM (docker inspect: OOMKilled), not a kill from outside", async (t) => {
    const s = t.spec(t.dir, {
      command: [
        "python3",
        "-c",
        "print('allocating', flush=True)\nx = []\nwhile True: x.append(bytearray(1 << 20))",
      ],
    });
    const limited = runner({ runArgs: ["--memory", "64m", "--memory-swap", "64m"] });
    const { exit, texts } = await runToEnd(s, limited);
    assert.deepEqual(texts, ["allocating"]);
    assert.deepEqual([exit.failure_class, exit.signal], ["OOM", "SIGKILL"]);
    assert.match(exit.reason, /OOM killer \(docker inspect: OOMKilled\)/);
    const card = diagnose(exit);
    assert.equal(card.cause_id, "host_oom_killed", JSON.stringify(card));
    assert.equal(card.retry, "fails_again");
  });

  test("exit 127 (no such program) and 126 (not executable) from docker are 'could not start'", async (t) => {
    await Deno.writeTextFile(`${t.dir}/data.txt`, "not a program\n");
    const noProgram = (await runToEnd(t.spec(t.dir, { command: ["trian.py", "--lr", "1"] }))).exit;
    assert.deepEqual([noProgram.failure_class, noProgram.exit_code], ["DISPATCH_FAILED", 127]);
    assert.match(noProgram.reason, /^could not start the program: .*"trian\.py".*not found/);
    const notExec = (await runToEnd(t.spec(t.dir, { command: [`${t.dir}/data.txt`] }))).exit;
    assert.deepEqual([notExec.failure_class, notExec.exit_code], ["DISPATCH_FAILED", 126]);
    assert.match(notExec.reason, /^could not start the program: .*permission denied/);
    // The card names the cause from docker's line; a retry cannot help either way.
    assert.equal(diagnose(noProgram).retry, "fails_again");
    assert.equal(diagnose(notExec).retry, "fails_again");
  });

  test("with fake GPUs docker run gets no --gpus and the job sees its slots' CUDA_VISIBLE_DEVICES", async (t) => {
    const s = t.spec(t.dir, {
      command: ["bash", "-c", 'echo "cvd=$CUDA_VISIBLE_DEVICES"'],
      gpu_indices: [1],
      env: { CUDA_VISIBLE_DEVICES: "1" },
    });
    const { exit, texts, handle } = await runToEnd(s, runner({ gpus: false }));
    assert.equal(exit.failure_class, null, exit.reason);
    assert.deepEqual(texts, ["cvd=1"]);
    assert.equal(JSON.stringify(handle.state()).includes("--gpus"), false);
    // What --gpus gets from an engine without the NVIDIA runtime: it could not start.
    const withGpus = (await runToEnd(t.spec(t.dir, { gpu_indices: [1] }))).exit;
    assert.equal(withGpus.failure_class, "DISPATCH_FAILED");
    assert.match(withGpus.reason, /could not select device driver/);
  });

  test("files a container writes in the working dir belong to root; with job_user to that user (--user)", async (t) => {
    const asRoot = await runToEnd(
      t.spec(t.dir, { command: ["bash", "-c", "id -u; echo x > by-default.txt"] }),
    );
    assert.deepEqual(asRoot.texts, ["0"]);
    assert.deepEqual(owner(`${t.dir}/by-default.txt`), [0, 0]);

    const jobUser = { name: "trainer", uid: 4242, gid: 4343, home: "/", shell: "/bin/bash" };
    await Deno.chmod(t.dir, 0o777);
    const asUser = await runToEnd(
      t.spec(t.dir, { command: ["bash", "-c", "id -u; id -g; echo x > as-user.txt"] }),
      runner({ jobUser }),
    );
    assert.equal(asUser.exit.failure_class, null, asUser.exit.reason);
    assert.deepEqual(asUser.texts, ["4242", "4343"]);
    assert.deepEqual(owner(`${t.dir}/as-user.txt`), [4242, 4343]);
  });

  test("an agent killed with kill -9 leaves the container running; the next agent reattaches by its name and removes it at the end", async (t) => {
    const { lines, state, stub } = await killedAgent(t, 150);
    assert.equal(state.container, containerName(state.run_id as string));
    assert.deepEqual(await leftOf(e, [state.run_id as string]), [state.container]);
    const after: OutputLine[] = [];
    const handle = await runner().reattach(
      state,
      { onLine: (l) => void after.push(l) },
      lines.at(-1)!.seq,
    );
    const exit = await handle.exited;
    assert.deepEqual([exit.exit_code, exit.failure_class], [0, null]);
    const all = [...lines, ...after];
    assert.deepEqual(all.map((l) => l.seq), all.map((_, i) => i + 1));
    assert.deepEqual(all.map((l) => l.text), Array.from({ length: 150 }, (_, i) => `line ${i}`));
    await stub.status;
  });

  test("an agent killed together with its docker client: the next agent removes the orphaned container", async (t) => {
    const { state, stub } = await killedAgent(t, 100_000);
    // As when a service manager kills the agent's whole cgroup: the wrapper and the docker
    // client die, the container (in the engine's cgroup) runs on with no one reading it.
    const wrapper = state.wrapper_pid as number;
    Deno.kill(-wrapper, "SIGKILL");
    await waitFor("the wrapper to end", () => !exists(`/proc/${wrapper}`));
    const running = await e.docker(
      "inspect",
      "--format",
      "{{.State.Running}}",
      state.container as string,
    );
    assert.equal(running.stdout.trim(), "true", "the container outlived its client");
    const handle = await runner().reattach(state, { onLine: () => {} }, 0);
    const exit = await handle.exited;
    assert.equal(exit.failure_class, "AGENT_RESTART");
    await stub.status;
  });

  test("an agent that stopped while starting an attempt: recover() follows it from its handle file, or removes its container", async (t) => {
    const s = t.spec(t.dir, { command: ["bash", "-c", "echo started; exec sleep 300"] });
    const lines: string[] = [];
    const first = await runner().start(s, { onLine: (l) => void lines.push(l.text) });
    await waitFor("output", () => lines.length === 1);
    first.detach();
    const found = await runner().recover!(s, { onLine: () => {} });
    assert.ok(found !== null, "followed from the handle file");
    found.detach();
    // No handle file: it stopped before the attempt was recorded anywhere.
    await Deno.remove(`${s.run_dir}/handle.json`);
    assert.equal(await runner().recover!(s, { onLine: () => {} }), null);
    await waitFor("the container to go", async () => (await leftOf(e, [s.run_id])).length === 0);
    await waitFor("the wrapper to end", () => first.pids().length === 0);
  });

  /** Starts testdata/agent_stub.ts with a docker job printing `n` lines, then kills it -9. */
  async function killedAgent(t: { dir: string; spec: typeof spec }, n: number) {
    const stubPath = new URL("../agent/runner/testdata/agent_stub.ts", import.meta.url).pathname;
    await Deno.writeTextFile(
      `${t.dir}/count.py`,
      `import time\nfor i in range(${n}):\n    print(f'line {i}', flush=True)\n    time.sleep(0.02)\n`,
    );
    const s = t.spec(t.dir, { command: ["python3", `${t.dir}/count.py`] });
    const stub = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", stubPath, JSON.stringify(s), t.dir, "docker"],
      env: e.env,
      stdout: "null",
      stderr: "null",
    }).spawn();
    const delivered = async () => {
      const text = await Deno.readTextFile(`${t.dir}/delivered.jsonl`).catch(() => "");
      return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as OutputLine);
    };
    try {
      await waitFor("five lines", async () => (await delivered()).length >= 5, 30_000);
      await waitFor("the state", () => exists(`${t.dir}/state.json`));
    } finally {
      stub.kill("SIGKILL");
    }
    await stub.status;
    const lines = await delivered();
    const state = JSON.parse(await Deno.readTextFile(`${t.dir}/state.json`));
    return { lines, state, stub };
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function owner(path: string): [number | null, number | null] {
  const info = Deno.statSync(path);
  return [info.uid, info.gid];
}

/** The failure card the server would show for this end (server/failure's catalogue). */
function diagnose(exit: ExitInfo) {
  return diagnoseFailure({
    status: "FAILED",
    exit_code: exit.exit_code,
    signal: exit.signal,
    failure_class: exit.failure_class,
    events: [{ type: "RUN_FAILED", message: `Run r-1 ended FAILED: ${exit.reason}` }],
    log_tail: exit.log_tail.map((text, i) => ({ seq: i + 1, text })),
  });
}
