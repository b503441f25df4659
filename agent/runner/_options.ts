// Options both runners take, and what both check before starting anything.

import { checkWorkingDir, resolveProgram } from "./_launch.ts";
import type { LoopOptions } from "./_lifecycle.ts";
import { jobBaseEnv } from "./base_env.ts";
import type { JobUser } from "./job_user.ts";
import type { RunSpec } from "./types.ts";

/** How often the output files are read and the wrapper checked, in ms. */
export const DEFAULT_POLL_MS = 100;
/** How often /proc is walked for new descendants of a running attempt, in ms. */
export const DEFAULT_SCAN_MS = 1000;

/** Options both runners take; every field is optional. */
export interface RunnerOptions {
  /**
   * The agent's environment. Jobs get only its allowed part (base_env.ts) plus their own
   * `env`; the docker CLI gets all of it. @default the agent's environment
   */
  baseEnv?: Record<string, string>;
  /**
   * Run jobs as this user (the agent must be root; `job_user` in agent.yaml). @default null:
   * jobs run as the agent's user
   */
  jobUser?: JobUser | null;
  /** The `setpriv` that switches to `jobUser`. @default "setpriv" on the agent's PATH */
  setpriv?: string;
  /** The bash that runs the wrapper and shell-string commands. @default "bash" on the PATH of `baseEnv` */
  bash?: string;
  /** Milliseconds between reads of the output files. @default DEFAULT_POLL_MS (100) */
  pollMs?: number;
  /** Milliseconds between walks of /proc for a running attempt's descendants. @default DEFAULT_SCAN_MS (1000) */
  scanMs?: number;
  /** The clock for line timestamps. @default () => new Date() */
  now?: () => Date;
}

/** `RunnerOptions` with every field filled. */
export interface ResolvedRunnerOptions extends LoopOptions {
  /** The agent's whole environment. */
  agentEnv: Record<string, string>;
  /** What every job starts from: the allowed part of `agentEnv`, as the job user. */
  jobBaseEnv: Record<string, string>;
  jobUser: JobUser | null;
  /** Resolved once, on first use. */
  bash: () => Promise<string>;
  /** Resolved once, on first use; null when there is none. */
  setpriv: () => Promise<string | null>;
}

/** Fills in the defaults of `options`. */
export function resolveRunnerOptions(options: RunnerOptions): ResolvedRunnerOptions {
  const baseEnv = options.baseEnv ?? Deno.env.toObject();
  const jobUser = options.jobUser ?? null;
  let bash: Promise<string> | null = null;
  let setpriv: Promise<string | null> | null = null;
  return {
    agentEnv: baseEnv,
    jobBaseEnv: jobBaseEnv(baseEnv, jobUser),
    jobUser,
    bash: () =>
      bash ??= options.bash !== undefined ? Promise.resolve(options.bash) : resolveProgram(
        "bash",
        baseEnv.PATH ?? "",
        "/",
      ).then((found) => found ?? "/bin/bash"),
    setpriv: () =>
      setpriv ??= options.setpriv !== undefined
        ? Promise.resolve(options.setpriv)
        : resolveProgram("setpriv", baseEnv.PATH ?? "", "/"),
    pollMs: options.pollMs ?? DEFAULT_POLL_MS,
    scanMs: options.scanMs ?? DEFAULT_SCAN_MS,
    now: options.now ?? (() => new Date()),
  };
}

/** The job's command as argv: a shell string (or argv with `shell`) runs under `bash -lc`. */
export function commandArgv(spec: RunSpec, bash: string): string[] {
  if (typeof spec.command === "string") return [bash, "-lc", spec.command];
  if (spec.shell) return [bash, "-lc", spec.command.join(" ")];
  return spec.command;
}

/** Why `program` cannot be started from `cwd` with `path`, or null when it can. */
export async function checkProgram(
  program: string | undefined,
  path: string,
  cwd: string,
): Promise<string | null> {
  if (program === undefined || program === "") return "the command is empty";
  if (await resolveProgram(program, path, cwd) !== null) return null;
  return program.includes("/")
    ? `program "${program}" does not exist or is not executable (working directory "${cwd}")`
    : `program "${program}" was not found on PATH ("${path}")`;
}

/** Why the attempt cannot start in its working dir, or null. Creates the run dir. */
export async function prepareRunDir(spec: RunSpec): Promise<string | null> {
  await Deno.mkdir(spec.run_dir, { recursive: true });
  return await checkWorkingDir(spec.working_dir);
}
