/**
 * The Slurm runner against a scripted Slurm (a fake `SlurmCli`): what it submits, how it
 * follows a job through Slurm's states, cancels it and reattaches. The real commands are
 * exercised end to end in tests/e2e_slurm_test.ts.
 */
import { assert, assertEquals, assertStringIncludes } from "../../../tests/assert.ts";
import type { OutputLine, QueuedInfo, RunSpec } from "../types.ts";
import type { SlurmCli } from "./cli.ts";
import type { SlurmRecord } from "./parse.ts";
import { createSlurmRunner } from "./slurm_runner.ts";
import { SLURM_FILES, type SlurmSettings } from "./sbatch.ts";

const settings: SlurmSettings = {
  partition: "gpu",
  account: null,
  qos: null,
  time_limit: "00:30:00",
  extra_args: [],
  max_gpus: 6,
};

/** A Slurm whose answers the test sets, recording what it was asked. */
class ScriptedSlurm implements SlurmCli {
  /** Jobs by id; the first one submitted is 77. */
  jobs = new Map<string, SlurmRecord>();
  #nextId = 77;
  get job(): SlurmRecord | null {
    return this.jobs.get("77") ?? null;
  }
  set job(record: SlurmRecord | null) {
    if (record) this.jobs.set("77", record);
    else this.jobs.delete("77");
  }
  accounted: SlurmRecord | null = null;
  submits: { args: string[]; env: Record<string, string> }[] = [];
  cancels: (string | null)[] = [];
  refuse: string | null = null;
  gpus: number | null = 8;
  /** What a cancel does to the job (a job that ignores TERM: nothing). */
  onCancel: (signal: string | null) => void = () => {};

  submit(args: string[], env: Record<string, string>) {
    this.submits.push({ args, env });
    if (this.refuse) return Promise.resolve({ error: this.refuse });
    const id = String(this.#nextId++);
    this.jobs.set(id, { JobId: id, JobState: "PENDING", Reason: "None" });
    return Promise.resolve({ job_id: id });
  }
  /** squeue calls, each with the ids it asked about. */
  stateCalls: string[][] = [];
  states(ids: string[]) {
    this.stateCalls.push(ids);
    const listed = new Map<string, SlurmRecord>();
    for (const id of ids) {
      const job = this.jobs.get(id);
      if (!job) continue;
      const { JobState = "", Reason = "", NodeList = "" } = job;
      listed.set(id, { JobId: id, JobState, Reason, NodeList });
    }
    return Promise.resolve(listed);
  }
  show(id: string) {
    const job = this.jobs.get(id);
    return Promise.resolve(job ? { ...job } : null);
  }
  accounting(_id: string) {
    return Promise.resolve(this.accounted);
  }
  cancel(_id: string, signal: "TERM" | "KILL" | null) {
    this.cancels.push(signal);
    this.onCancel(signal);
    return Promise.resolve(true);
  }
  findByName(name: string) {
    return Promise.resolve(name === "gpuctl-r-1" ? [...this.jobs.keys()] : []);
  }
  partitionGpus(_partition: string) {
    return Promise.resolve(this.gpus);
  }
}

async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-slurm-runner-" });
  await Deno.mkdir(`${dir}/work`);
  const slurm = new ScriptedSlurm();
  const runner = createSlurmRunner({
    settings,
    cli: slurm,
    baseEnv: { PATH: "/usr/bin:/bin", GPUCTL_AGENT_TOKEN: "secret", SLURM_CONF: "/etc/slurm.conf" },
    pollMs: 5,
    statePollMs: 5,
    passwd: () => "root:x:0:0::/root:/bin/bash\nalice:x:1000:1000::/home/alice:/bin/bash\n",
  });
  const spec: RunSpec = {
    run_id: "r-1",
    job_id: "j-1",
    attempt: 1,
    command: ["python", "train.py"],
    shell: false,
    working_dir: `${dir}/work`,
    env: { GPUCTL_RUN_ID: "r-1", CUDA_VISIBLE_DEVICES: "0,1" },
    gpu_indices: [0, 1],
    runner: "process",
    image: null,
    run_dir: `${dir}/runs/r-1`,
    grace_s: 0.05,
  };
  const lines: OutputLine[] = [];
  const queued: QueuedInfo[] = [];
  const hooks = {
    onLine: (l: OutputLine) => lines.push(l),
    onQueued: (q: QueuedInfo) => queued.push(q),
  };
  return {
    dir,
    slurm,
    runner,
    spec,
    lines,
    queued,
    hooks,
    async cleanup() {
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Runs `test` with a fresh runner, scripted Slurm and temp dir, removed afterwards. */
async function withRunner(test: (t: Awaited<ReturnType<typeof setup>>) => Promise<void>) {
  const t = await setup();
  try {
    await test(t);
  } finally {
    await t.cleanup();
  }
}

/** What the batch script writes when Slurm starts it. */
async function jobStarted(runDir: string, gpus: string) {
  await Deno.writeTextFile(
    `${runDir}/${SLURM_FILES.started}`,
    `node=gpu-07\nslurm_job_gpus=${gpus}\ncuda_visible_devices=${gpus}\n`,
  );
}

async function until(fn: () => boolean | Promise<boolean>, what: string, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`${what} not reached in ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("the Slurm runner submits, reports Slurm's reason while pending, where it started, its output and its end", async () => {
  await withRunner(async (t) => {
    const handle = await t.runner.start(t.spec, t.hooks);
    const { args, env } = t.slurm.submits[0];
    assertEquals(args.slice(0, 6), [
      "--parsable",
      "--job-name",
      "gpuctl-r-1",
      "--partition",
      "gpu",
      "--gres=gpu:2",
    ]);
    assertEquals(args.at(-1), `${t.spec.run_dir}/${SLURM_FILES.script}`);
    assertEquals([env.GPUCTL_AGENT_TOKEN, env.CUDA_VISIBLE_DEVICES, env.SLURM_CONF], [
      undefined,
      undefined,
      "/etc/slurm.conf",
    ]);
    assertEquals(handle.state(), {
      run_id: "r-1",
      runner: "slurm",
      run_dir: t.spec.run_dir,
      slurm_job_id: "77",
    });
    assertEquals(await t.runner.poolGpus(), 6);

    await until(() => t.queued.length === 1, "pending reported");
    t.slurm.job = { JobId: "77", JobState: "PENDING", Reason: "Resources" };
    await until(() => t.queued.length === 2, "the new reason reported");
    assertEquals(t.queued.map((q) => q.reason), [
      "Slurm: pending (not yet scheduled)",
      "Slurm: pending (Resources)",
    ]);

    t.slurm.job = { JobId: "77", JobState: "RUNNING", NodeList: "gpu-07", GRES: "gpu:2(IDX:2-3)" };
    await jobStarted(t.spec.run_dir, "2,3");
    assertEquals(await handle.started, {
      slurm_job_id: "77",
      node_name: "gpu-07",
      gpu_indices: [2, 3],
    });
    await Deno.writeTextFile(`${t.spec.run_dir}/stdout.raw`, "epoch 1\n", { append: true });
    await until(() => t.lines.length === 1, "the output line");

    await Deno.writeTextFile(`${t.spec.run_dir}/stdout.raw`, "done\n", { append: true });
    await Deno.writeTextFile(`${t.spec.run_dir}/exit_status`, "0\n");
    t.slurm.job = { JobId: "77", JobState: "COMPLETED", ExitCode: "0:0", NodeList: "gpu-07" };
    const exit = await handle.exited;
    assertEquals([exit.exit_code, exit.failure_class], [0, null]);
    assertEquals(t.lines.map((l) => l.text), ["epoch 1", "done"]);
  });
});

Deno.test("a job sbatch refuses ends DISPATCH_FAILED with sbatch's words; a docker job is refused before sbatch", async () => {
  await withRunner(async (t) => {
    t.slurm.refuse = "sbatch refused the job: Requested node configuration is not available";
    const exit = await (await t.runner.start(t.spec, t.hooks)).exited;
    assertEquals(exit.failure_class, "DISPATCH_FAILED");
    assertStringIncludes(exit.reason, "Requested node configuration is not available");
    const docker =
      await (await t.runner.start({ ...t.spec, runner: "docker", image: "x" }, t.hooks)).exited;
    assertEquals(docker.failure_class, "DISPATCH_FAILED");
    assertStringIncludes(docker.reason, "not Docker images");
    assertEquals(t.slurm.submits.length, 1);
  });
});

Deno.test("cancel: TERM to the whole job, then KILL and scancel after grace_s; it ends once Slurm ended the job", async () => {
  await withRunner(async (t) => {
    const handle = await t.runner.start(t.spec, t.hooks);
    t.slurm.job = { JobId: "77", JobState: "RUNNING", NodeList: "gpu-07" };
    await jobStarted(t.spec.run_dir, "0,1");
    await handle.started;
    // The job ignores TERM; a plain scancel ends it after Slurm's KillWait.
    t.slurm.onCancel = (signal) => {
      if (signal === null) t.slurm.job = { JobId: "77", JobState: "CANCELLED", ExitCode: "0:9" };
    };
    await handle.cancel(0.05);
    assertEquals(t.slurm.cancels, ["TERM", "KILL", null]);
    const exit = await handle.exited;
    assertEquals([exit.failure_class, exit.signal], ["CANCELLED", "SIGKILL"]);
  });
});

Deno.test("cancel of a job still pending takes it out of the queue and never reports it started", async () => {
  await withRunner(async (t) => {
    const handle = await t.runner.start(t.spec, t.hooks);
    await until(() => t.queued.length === 1, "pending reported");
    t.slurm.onCancel = () => t.slurm.job = { JobId: "77", JobState: "CANCELLED", ExitCode: "0:0" };
    await handle.cancel(5);
    assertEquals(t.slurm.cancels, [null]);
    assertEquals((await handle.exited).failure_class, "CANCELLED");
    const started = await Promise.race([handle.started, Promise.resolve("not started")]);
    assertEquals(started, "not started");
  });
});

Deno.test("a job cancelled in Slurm by someone else is CANCELLED, naming who when accounting says", async () => {
  await withRunner(async (t) => {
    const handle = await t.runner.start(t.spec, t.hooks);
    t.slurm.job = { JobId: "77", JobState: "CANCELLED", ExitCode: "0:15" };
    t.slurm.accounted = { JobID: "77", State: "CANCELLED by 1000", ExitCode: "0:15" };
    const exit = await handle.exited;
    assertEquals(exit.failure_class, "CANCELLED");
    assertEquals(exit.reason, "cancelled in Slurm by alice (uid 1000), not by gpuctl");
  });
});

Deno.test("reattach follows the same Slurm job: nothing is submitted again, output resumes after the last line delivered", async () => {
  await withRunner(async (t) => {
    const first = await t.runner.start(t.spec, t.hooks);
    t.slurm.job = { JobId: "77", JobState: "RUNNING", NodeList: "gpu-07" };
    await Deno.writeTextFile(`${t.spec.run_dir}/stdout.raw`, "a\nb\n");
    await until(() => t.lines.length === 2, "two lines");
    const state = first.state();
    first.detach();
    await Deno.writeTextFile(`${t.spec.run_dir}/stdout.raw`, "c\n", { append: true });

    const again: OutputLine[] = [];
    const second = await t.runner.reattach(state, { onLine: (l) => again.push(l) }, 1);
    await until(() => again.length === 2, "lines after the last delivered");
    assertEquals(again.map((l) => [l.seq, l.text]), [[2, "b"], [3, "c"]]);
    // Slurm has forgotten the job and keeps no accounting: the script's exit status tells.
    t.slurm.job = null;
    await Deno.writeTextFile(`${t.spec.run_dir}/exit_status`, "3\n");
    const exit = await second.exited;
    assertEquals([exit.exit_code, exit.failure_class], [3, "EXIT_CODE"]);
    assertEquals(t.slurm.submits.length, 1);
  });
});

Deno.test("a job Slurm has forgotten with no exit status left ends AGENT_RESTART, not as a guess", async () => {
  await withRunner(async (t) => {
    const handle = await t.runner.start(t.spec, t.hooks);
    t.slurm.job = null;
    const exit = await handle.exited;
    assertEquals(exit.failure_class, "AGENT_RESTART");
    assert(/no longer knows the job/.test(exit.reason), exit.reason);
  });
});

Deno.test("the attempts of one runner are followed with one squeue call per poll, however many there are", async () => {
  await withRunner(async (t) => {
    const other = { ...t.spec, run_id: "r-2", run_dir: `${t.dir}/runs/r-2` };
    const handles = [await t.runner.start(t.spec, t.hooks), await t.runner.start(other, t.hooks)];
    await until(() => t.queued.length === 2, "both pending");
    const seen = t.slurm.stateCalls.length;
    await until(() => t.slurm.stateCalls.length >= seen + 4, "four more polls");
    for (const ids of t.slurm.stateCalls.slice(seen)) assertEquals([...ids].sort(), ["77", "78"]);
    for (const h of handles) h.detach();
  });
});

Deno.test("recover finds a job an agent submitted but never recorded, by its name; none found is null", async () => {
  await withRunner(async (t) => {
    const first = await t.runner.start(t.spec, t.hooks);
    first.detach();
    // The agent died before saving anything: not even the handle file next to the output.
    await Deno.remove(`${t.spec.run_dir}/handle.json`);
    t.slurm.job = { JobId: "77", JobState: "RUNNING", NodeList: "gpu-07" };
    const found = await t.runner.recover!(t.spec, t.hooks);
    assert(found !== null);
    assertEquals(found.state().slurm_job_id, "77");
    t.slurm.job = { JobId: "77", JobState: "COMPLETED", ExitCode: "0:0" };
    assertEquals((await found.exited).failure_class, null);
    assertEquals(t.slurm.submits.length, 1);
    assertEquals(
      await t.runner.recover!({ ...t.spec, run_id: "r-9", run_dir: `${t.dir}/runs/r-9` }, t.hooks),
      null,
    );
  });
});
