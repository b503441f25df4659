import assert from "node:assert/strict";
import { readStat } from "./_proc.ts";
import { createProcessRunner } from "./process_runner.ts";
import { runnerConformance } from "./runner_conformance.ts";
import type { OutputLine, RunSpec } from "./types.ts";

runnerConformance({ kind: "process", makeRunner: () => createProcessRunner(), image: null });

Deno.test("process runner: a job outlives an agent killed with kill -9, and a new agent reattaches", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl_kill9_" });
  const stub = new URL("./testdata/agent_stub.ts", import.meta.url).pathname;
  const script = `${dir}/count.py`;
  await Deno.writeTextFile(
    script,
    "import time\nfor i in range(60):\n    print(f'line {i}', flush=True)\n    time.sleep(0.02)\n",
  );
  const spec: RunSpec = {
    run_id: "kill9",
    job_id: "j",
    attempt: 1,
    command: ["python3", script],
    shell: false,
    working_dir: dir,
    env: {},
    gpu_indices: [],
    runner: "process",
    image: null,
    run_dir: `${dir}/run`,
    grace_s: 1,
  };
  const agent = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", stub, JSON.stringify(spec), dir],
    stdout: "null",
    stderr: "null",
  }).spawn();
  let jobPid: number | null = null;
  try {
    const delivered = async () => {
      const text = await Deno.readTextFile(`${dir}/delivered.jsonl`).catch(() => "");
      return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as OutputLine);
    };
    const deadline = Date.now() + 15_000;
    while ((await delivered()).length < 5 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
    }
    agent.kill("SIGKILL");
    await agent.status;
    const before = await delivered();
    assert.ok(before.length >= 5, "the stub agent delivered lines");
    const state = JSON.parse(await Deno.readTextFile(`${dir}/state.json`));
    jobPid = state.wrapper_pid;
    assert.ok(readStat(state.wrapper_pid) !== null, "the job outlived its agent");

    const after: OutputLine[] = [];
    const handle = await createProcessRunner().reattach(
      state,
      { onLine: (l) => void after.push(l) },
      before.at(-1)!.seq,
    );
    const exit = await handle.exited;
    assert.deepEqual([exit.exit_code, exit.failure_class], [0, null]);
    const all = [...before, ...after];
    assert.deepEqual(all.map((l) => l.seq), all.map((_, i) => i + 1));
    assert.deepEqual(all.map((l) => l.text), Array.from({ length: 60 }, (_, i) => `line ${i}`));
  } finally {
    try {
      agent.kill("SIGKILL");
    } catch {
      // already dead
    }
    await agent.status;
    if (jobPid !== null) {
      try {
        Deno.kill(-jobPid, "SIGKILL");
      } catch {
        // the job had ended
      }
    }
    await Deno.remove(dir, { recursive: true });
  }
});

/** Runs `spec` to its end with `runner`; its stdout lines. */
async function outputOf(runner: ReturnType<typeof createProcessRunner>, spec: RunSpec) {
  const lines: OutputLine[] = [];
  const exit = await (await runner.start(spec, { onLine: (l) => void lines.push(l) })).exited;
  return { exit, stdout: lines.filter((l) => l.stream === "stdout").map((l) => l.text) };
}

function jobSpec(dir: string, command: string[] | string, env: Record<string, string>): RunSpec {
  const runId = `env${crypto.randomUUID().slice(0, 8)}`;
  return {
    run_id: runId,
    job_id: "j",
    attempt: 1,
    command,
    shell: typeof command === "string",
    working_dir: dir,
    env,
    gpu_indices: [0],
    runner: "process",
    image: null,
    run_dir: `${dir}/runs/${runId}`,
    grace_s: 1,
  };
}

Deno.test("process runner: a job sees none of the agent's own environment, only the allow-list, its env and gpuctl's", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl_env_" });
  try {
    const agentEnv = {
      PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
      HOME: "/home/agent",
      LANG: "C.UTF-8",
      LC_ALL: "C.UTF-8",
      NVIDIA_DRIVER_CAPABILITIES: "compute,utility",
      LD_LIBRARY_PATH: "/usr/local/cuda/lib64",
      GPUCTL_HOME: "/root/.gpuctl",
      GPUCTL_AGENT_TOKEN: "gpc_agentid_AGENTSECRETAGENTSECRET00",
      GPUCTL_TOKEN: "gpc_adminid_ADMINSECRETADMINSECRET00",
      AWS_SECRET_ACCESS_KEY: "agent-aws-secret",
      SSH_AUTH_SOCK: "/tmp/ssh-agent.sock",
      LD_PRELOAD: "/opt/agent/hook.so",
    };
    const runner = createProcessRunner({ baseEnv: agentEnv });
    const jobEnv = {
      CUDA_VISIBLE_DEVICES: "0",
      GPUCTL_RUN_ID: "r-1",
      HF_TOKEN: "hf_job_secret",
      MULTI: "line one\nline two",
    };
    const { exit, stdout } = await outputOf(
      runner,
      jobSpec(dir, ["env"], jobEnv),
    );
    assert.equal(exit.failure_class, null, exit.reason);
    const text = stdout.join("\n");
    // bash, which starts the job, adds PWD, SHLVL and _ as any shell does.
    const shellAdds = new Set(["PWD", "SHLVL", "_", "OLDPWD"]);
    const names = stdout.map((l) => /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(l)?.[1])
      .filter((n): n is string => n !== undefined && !shellAdds.has(n)).sort();
    assert.deepEqual(names, [
      "CUDA_VISIBLE_DEVICES",
      "GPUCTL_RUN_ID",
      "HF_TOKEN",
      "HOME",
      "LANG",
      "LC_ALL",
      "LD_LIBRARY_PATH",
      "MULTI",
      "NVIDIA_DRIVER_CAPABILITIES",
      "PATH",
    ]);
    assert.ok(text.includes("MULTI=line one\nline two\n"), text);
    assert.ok(text.includes("HF_TOKEN=hf_job_secret\n"), text);
    for (const leaked of ["AGENTSECRET", "ADMINSECRET", "agent-aws-secret", ".gpuctl"]) {
      assert.equal(text.includes(leaked), false, `the job saw "${leaked}"`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("process runner: a job's variables never reach the wrapper or a command line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl_env_" });
  try {
    const runner = createProcessRunner({ baseEnv: { PATH: Deno.env.get("PATH") ?? "/bin" } });
    const spec = jobSpec(dir, ["sleep", "30"], { HF_TOKEN: "hf_never_in_ps" });
    const handle = await runner.start(spec, { onLine: () => {} });
    try {
      const deadline = Date.now() + 10_000;
      while (handle.pids().length < 2 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const pids = handle.pids();
      assert.ok(pids.length >= 2, "the wrapper and the job run");
      for (const pid of pids) {
        const cmdline = await Deno.readTextFile(`/proc/${pid}/cmdline`).catch(() => "");
        assert.equal(cmdline.includes("hf_never_in_ps"), false, `pid ${pid}: ${cmdline}`);
      }
      const wrapperEnv = await Deno.readTextFile(`/proc/${handle.pid}/environ`);
      assert.equal(wrapperEnv.includes("HF_TOKEN"), false, "the wrapper has no job variable");
      const jobPid = pids.find((p) => p !== handle.pid)!;
      const jobEnv = await Deno.readTextFile(`/proc/${jobPid}/environ`);
      assert.ok(jobEnv.includes("HF_TOKEN=hf_never_in_ps"), "the job has its variable");
      const files = [...Deno.readDirSync(spec.run_dir)].map((e) => e.name);
      assert.equal(files.includes("job.env"), false, "the variables file is removed at start");
    } finally {
      await handle.cancel(0);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
