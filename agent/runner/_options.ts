// Options both runners take, and what both check before starting anything.

import { checkWorkingDir, resolveProgram } from "./_launch.ts";
import type { LoopOptions } from "./_lifecycle.ts";
import type { RunSpec } from "./types.ts";

/** How often the output files are read and the wrapper checked, in ms. */
export const DEFAULT_POLL_MS = 100;
/** How often /proc is walked for new descendants of a running attempt, in ms. */
export const DEFAULT_SCAN_MS = 1000;

/** Options both runners take; every field is optional. */
export interface RunnerOptions {
  /** The environment a job's `env` is added to. @default the agent's environment */
  baseEnv?: Record<string, string>;
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
  baseEnv: Record<string, string>;
  /** Resolved once, on first use. */
  bash: () => Promise<string>;
}

/** Fills in the defaults of `options`. */
export function resolveRunnerOptions(options: RunnerOptions): ResolvedRunnerOptions {
  const baseEnv = options.baseEnv ?? Deno.env.toObject();
  let bash: Promise<string> | null = null;
  return {
    baseEnv,
    bash: () =>
      bash ??= options.bash !== undefined ? Promise.resolve(options.bash) : resolveProgram(
        "bash",
        baseEnv.PATH ?? "",
        "/",
      ).then((found) => found ?? "/bin/bash"),
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
