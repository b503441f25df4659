// The `sbatch` line and the batch script of an attempt (pure). Nothing from the job is
// interpolated into shell code unquoted: each argv item is single-quoted in the script.

import { commandArgv } from "../_options.ts";
import { RUN_FILES } from "../run_dir.ts";
import type { RunSpec } from "../types.ts";

/** The `slurm:` section of agent.yaml, resolved. */
export interface SlurmSettings {
  partition: string;
  account: string | null;
  qos: string | null;
  /** `--time` (`HH:MM:SS`, `D-HH`, minutes …) or null for the partition's default. */
  time_limit: string | null;
  /** Passed to sbatch as given, before the script (`--constraint=a100`, `--mem=64G` …). */
  extra_args: string[];
  /** The most GPUs the pool reports, or null for all the partition has. */
  max_gpus: number | null;
}

/** Files of the Slurm runner in the run dir, besides the ones every runner keeps (RUN_FILES). */
export const SLURM_FILES = {
  /** The batch script handed to sbatch. */
  script: "job.sbatch",
  /** Written by the batch script when the job starts: `node=`, `gpus=`, `cuda_visible_devices=`. */
  started: "slurm_started",
} as const;

/** `'…'` with inner quotes escaped: one word for bash, whatever it holds. */
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The job name Slurm shows in squeue. */
export function slurmJobName(runId: string): string {
  return `gpuctl-${runId}`;
}

/** The GPUCTL_* variables named in `--export` (their values come from sbatch's environment). */
export function exportedNames(env: Record<string, string>): string[] {
  return Object.keys(env).filter((name) => /^GPUCTL_[A-Z0-9_]+$/.test(name)).sort();
}

/**
 * `sbatch` arguments for an attempt (the script path last). The values of the job's variables
 * are never on the command line (any user of the host could read them in `ps`): sbatch gets
 * them in its environment and `--export=ALL,…` hands them to the job. `--no-requeue`: a job
 * Slurm preempts or loses with its node ends, and gpuctl starts the next attempt as a new
 * run, so one run's output is never written twice.
 */
export function sbatchArgs(spec: RunSpec, settings: SlurmSettings, scriptPath: string): string[] {
  const args = [
    "--parsable",
    "--job-name",
    slurmJobName(spec.run_id),
    "--partition",
    settings.partition,
  ];
  const gpus = spec.gpu_indices.length;
  if (gpus > 0) args.push(`--gres=gpu:${gpus}`);
  args.push(
    "--chdir",
    spec.working_dir,
    "--output",
    `${spec.run_dir}/${RUN_FILES.stdout}`,
    "--error",
    `${spec.run_dir}/${RUN_FILES.stderr}`,
    "--open-mode=append",
    "--no-requeue",
    `--export=${["ALL", ...exportedNames(spec.env)].join(",")}`,
  );
  if (settings.account) args.push("--account", settings.account);
  if (settings.qos) args.push("--qos", settings.qos);
  if (settings.time_limit) args.push("--time", settings.time_limit);
  args.push(...settings.extra_args, scriptPath);
  return args;
}

/**
 * The batch script: records where Slurm started it (host, GPU indices) in the run dir, runs
 * the command and records its exit status there, as the process runner's wrapper does, so the
 * end is known even when Slurm has forgotten the job and keeps no accounting. `trap :` keeps
 * the script alive through a SIGTERM to the whole step so it can write the status.
 */
export function batchScript(spec: RunSpec): string {
  const d = shellQuote(spec.run_dir);
  const command = commandArgv(spec, "bash").map(shellQuote).join(" ");
  return [
    "#!/bin/bash",
    `# gpuctl run ${spec.run_id}: job ${spec.job_id}, attempt ${spec.attempt}`,
    `d=${d}`,
    "{",
    '  echo "node=${SLURMD_NODENAME:-$(hostname -s)}"',
    '  echo "slurm_job_gpus=${SLURM_JOB_GPUS-}"',
    '  echo "cuda_visible_devices=${CUDA_VISIBLE_DEVICES-}"',
    `} >"$d/${SLURM_FILES.started}.tmp" && mv -f "$d/${SLURM_FILES.started}.tmp" "$d/${SLURM_FILES.started}"`,
    "trap : TERM INT HUP",
    `${command} </dev/null`,
    "s=$?",
    `echo "$s" >"$d/${RUN_FILES.exitStatus}"`,
    'exit "$s"',
    "",
  ].join("\n");
}

/**
 * sbatch's environment: the job's base environment and its variables, with the GPUs left to
 * Slurm (it sets CUDA_VISIBLE_DEVICES to the ones it binds; a CPU-only job gets none), plus
 * the agent's `SLURM_CONF` so sbatch finds the cluster.
 */
export function sbatchEnv(
  spec: RunSpec,
  jobBaseEnv: Record<string, string>,
  agentEnv: Record<string, string>,
): Record<string, string> {
  const env: Record<string, string> = { ...jobBaseEnv, ...spec.env };
  if (spec.gpu_indices.length > 0) delete env.CUDA_VISIBLE_DEVICES;
  else env.CUDA_VISIBLE_DEVICES = "";
  if (agentEnv.SLURM_CONF) env.SLURM_CONF = agentEnv.SLURM_CONF;
  return env;
}
