/**
 * Runners start each attempt of a job, stream its output, report how it ended and cancel
 * it: as a plain process tree ({@linkcode createProcessRunner}), in a Docker container
 * ({@linkcode createDockerRunner}), or handed to Slurm ({@linkcode createSlurmRunner}). All
 * survive an agent restart: the job's output goes to files in the run dir and `reattach()`
 * resumes from them (a Slurm job is found again by its Slurm job id).
 *
 * @module
 */

/** The runner interface, the spec of an attempt, and what a runner reports. */
export type {
  ExitInfo,
  HandleState,
  OutputLine,
  RunHandle,
  RunHooks,
  Runner,
  RunSpec,
} from "./types.ts";
/** Creates the process runner (first class: no Docker needed). */
export { createProcessRunner } from "./process_runner.ts";
/** Options of {@linkcode createProcessRunner}. */
export type { ProcessRunnerOptions } from "./process_runner.ts";
/** Creates the Docker runner (`docker run --name gpuctl-<run_id> …`, removed once read). */
export { containerName, createDockerRunner, dockerRunArgs } from "./docker_runner.ts";
/** Options of {@linkcode createDockerRunner}. */
export type { DockerRunnerOptions } from "./docker_runner.ts";
/** Creates the Slurm runner (each attempt handed to `sbatch`, followed with `scontrol`/`sacct`). */
export { createSlurmRunner, DEFAULT_SLURM_POLL_MS } from "./slurm/slurm_runner.ts";
/** Options of {@linkcode createSlurmRunner}, and the runner with its pool size. */
export type { SlurmRunner, SlurmRunnerOptions } from "./slurm/slurm_runner.ts";
/** Default timings shared by both runners. */
export { DEFAULT_POLL_MS, DEFAULT_SCAN_MS } from "./_options.ts";
/** Classifies how an attempt ended (pure: exit code, signal, cancel, log tail, OOM kill). */
export { classifyExit, CUDA_OOM_PATTERN } from "./classify_exit.ts";
/** Input and result of {@linkcode classifyExit}. */
export type { ExitFacts, ExitVerdict } from "./classify_exit.ts";
/** Names of the files a runner keeps in `RunSpec.run_dir`. */
export { RUN_FILES } from "./run_dir.ts";
/** Longest output line kept, in bytes; longer lines are cut and marked. */
export { MAX_LINE_BYTES } from "./line_splitter.ts";
/** Reads a shell-style exit status (128 + N is signal N) and names signals. */
export { decodeExitStatus, signalName } from "./signals.ts";
/** The kernel's view of one process (`/proc/<pid>/stat`: parent, group, start time), or null. */
export { readStat } from "./_proc.ts";
export { onGrid } from "./_attempt.ts";
export { resolveProgram } from "./_launch.ts";
