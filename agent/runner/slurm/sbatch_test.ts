import { assert, assertEquals, assertStringIncludes } from "../../../tests/assert.ts";
import type { RunSpec } from "../types.ts";
import { batchScript, sbatchArgs, sbatchEnv, shellQuote, type SlurmSettings } from "./sbatch.ts";

const argv = ["python", "train.py", "--name", "it's $HOME"];
const spec: RunSpec = {
  run_id: "r-7",
  job_id: "j-3",
  attempt: 1,
  command: argv,
  shell: false,
  working_dir: "/shared/work",
  env: { GPUCTL_RUN_ID: "r-7", GPUCTL_INGEST_URL: "http://h:8601/k/x/runs/r-7", LR: "0.1" },
  gpu_indices: [0, 1],
  runner: "process",
  image: null,
  run_dir: "/shared/agent/runs/r-7",
  grace_s: 5,
};
const settings: SlurmSettings = {
  partition: "gpu",
  account: null,
  qos: null,
  time_limit: null,
  extra_args: [],
  max_gpus: null,
};

Deno.test("sbatchArgs() builds the sbatch line for an attempt", () => {
  assertEquals(sbatchArgs(spec, settings, "/s/job.sbatch"), [
    "--parsable",
    "--job-name",
    "gpuctl-r-7",
    "--partition",
    "gpu",
    "--gres=gpu:2",
    "--chdir",
    "/shared/work",
    "--output",
    "/shared/agent/runs/r-7/stdout.raw",
    "--error",
    "/shared/agent/runs/r-7/stderr.raw",
    "--open-mode=append",
    "--no-requeue",
    "--export=ALL,GPUCTL_INGEST_URL,GPUCTL_RUN_ID",
    "/s/job.sbatch",
  ]);
});

Deno.test("sbatchArgs() adds account, QOS, time limit and extra args; a CPU job asks for no GPU", () => {
  const args = sbatchArgs(
    { ...spec, gpu_indices: [] },
    {
      ...settings,
      account: "lab",
      qos: "high",
      time_limit: "04:00:00",
      extra_args: ["--mem=64G", "--constraint=a100"],
    },
    "/s/job.sbatch",
  );
  assert(!args.some((a) => a.startsWith("--gres")));
  assertEquals(args.slice(-9), [
    "--account",
    "lab",
    "--qos",
    "high",
    "--time",
    "04:00:00",
    "--mem=64G",
    "--constraint=a100",
    "/s/job.sbatch",
  ]);
});

Deno.test("batchScript() quotes argv exactly and runs a shell string with bash -lc", async () => {
  const script = batchScript(spec);
  assertStringIncludes(script, `'python' 'train.py' '--name' 'it'\\''s $HOME' </dev/null`);
  assertStringIncludes(script, `d='/shared/agent/runs/r-7'`);
  const shell = batchScript({ ...spec, command: "python train.py | tee out.txt", shell: true });
  assertStringIncludes(shell, `'bash' '-lc' 'python train.py | tee out.txt' </dev/null`);
  // What bash makes of the quoted words is the argv, byte for byte.
  const out = await new Deno.Command("bash", {
    args: ["-c", `printf '%s\\n' ${argv.map(shellQuote).join(" ")}`],
    stdout: "piped",
  }).output();
  assertEquals(new TextDecoder().decode(out.stdout), "python\ntrain.py\n--name\nit's $HOME\n");
});

Deno.test("sbatchEnv() leaves the GPUs to Slurm and passes SLURM_CONF", () => {
  const env = sbatchEnv(
    { ...spec, env: { ...spec.env, CUDA_VISIBLE_DEVICES: "0,1" } },
    { PATH: "/usr/bin" },
    { SLURM_CONF: "/etc/slurm/slurm.conf", GPUCTL_AGENT_TOKEN: "secret" },
  );
  assertEquals(env.CUDA_VISIBLE_DEVICES, undefined);
  assertEquals(env.SLURM_CONF, "/etc/slurm/slurm.conf");
  assertEquals(env.GPUCTL_AGENT_TOKEN, undefined);
  assertEquals(env.LR, "0.1");
  const cpu = sbatchEnv({ ...spec, gpu_indices: [] }, {}, {});
  assertEquals(cpu.CUDA_VISIBLE_DEVICES, "");
});
