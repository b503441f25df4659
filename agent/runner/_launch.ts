// Starts a job's command under a small bash wrapper, detached from the agent, so that the
// job survives the agent and its exit status is recorded even when the agent is not there
// to wait for it.

import { spawn } from "node:child_process";
import { readStat } from "./_proc.ts";
import { readKernelFile } from "./_kernel_files.ts";
import { RUN_FILES } from "./run_dir.ts";

/**
 * The wrapper: `bash -c WRAPPER_SCRIPT gpuctl-wrapper RUN_DIR ARGV…`. Nothing from the job
 * is interpolated into shell code: the command arrives as "$@". `trap :` (a handler, not
 * "ignore", so the job does not inherit it) keeps a SIGTERM sent to the whole group from
 * killing the wrapper before it writes the status; bash runs the trap after the job ends.
 * The job's own variables wait in a file the wrapper opens as fd 3 and removes at once;
 * {@linkcode ENV_LOADER_SCRIPT} reads them in the job's process (see there why).
 */
export const WRAPPER_SCRIPT = [
  "trap : TERM INT HUP",
  'd="$1"',
  "shift",
  `exec 3<"$d/${RUN_FILES.jobEnv}"`,
  `rm -f "$d/${RUN_FILES.jobEnv}"`,
  `"$@" </dev/null >>"$d/${RUN_FILES.stdout}" 2>>"$d/${RUN_FILES.stderr}"`,
  `echo "$?" >"$d/${RUN_FILES.exitStatus}"`,
].join("\n");

/**
 * `bash -c ENV_LOADER_SCRIPT gpuctl-job ARGV…`, the last step before the job's command:
 * exports the NUL-separated `NAME=value` items on fd 3, closes it and execs ARGV. The
 * variables a job asks for (any name: `LD_PRELOAD`, `BASH_ENV`, `SHELLOPTS` …) must not
 * reach a process that runs as the agent's user, such as the wrapper or `setpriv`, so they
 * are set only here, after the switch to the job user; and they never appear on a command
 * line, where any user of the host could read them.
 */
export const ENV_LOADER_SCRIPT = [
  `while IFS= read -r -d '' kv; do export "$kv"; done <&3`,
  "exec 3<&-",
  'exec "$@"',
].join("\n");

/** The contents of the job's variables file: `NAME=value` items, each ended by a NUL. */
export function encodeJobEnv(env: Record<string, string>): string {
  return Object.entries(env).map(([name, value]) => `${name}=${value}\0`).join("");
}

/** The wrapper, started. */
export interface LaunchedWrapper {
  pid: number;
  /** Its start time (field 22 of /proc/<pid>/stat); -1 if it had already ended. */
  startTime: number;
  /** Resolves with how the wrapper itself ended (it is our child while this agent lives). */
  ended: Promise<{ code: number | null; signal: string | null }>;
}

/** Options of {@linkcode launchWrapper}. */
export interface LaunchOptions {
  bash: string;
  runDir: string;
  argv: string[];
  cwd: string;
  /** The wrapper's environment (the job's base environment: see base_env.ts). */
  env: Record<string, string>;
  /** Variables for {@linkcode ENV_LOADER_SCRIPT}; the file is written even when empty. */
  jobEnv: Record<string, string>;
}

/**
 * Spawns the wrapper in a new session (so a new process group whose id is its pid), with
 * no pipes to the agent, and lets the agent exit without waiting for it.
 */
export async function launchWrapper(options: LaunchOptions): Promise<LaunchedWrapper> {
  await Deno.writeTextFile(`${options.runDir}/${RUN_FILES.jobEnv}`, encodeJobEnv(options.jobEnv), {
    mode: 0o600,
  });
  return await new Promise((resolve, reject) => {
    const child = spawn(
      options.bash,
      ["-c", WRAPPER_SCRIPT, "gpuctl-wrapper", options.runDir, ...options.argv],
      { cwd: options.cwd, env: options.env, detached: true, stdio: "ignore" },
    );
    const ended = new Promise<{ code: number | null; signal: string | null }>((done) => {
      child.once("exit", (code, signal) => done({ code, signal }));
    });
    child.once("error", (err) => {
      if (child.pid === undefined) {
        reject(new Error(`Cannot start "${options.bash}": ${err.message}`, { cause: err }));
      }
    });
    const pid = child.pid;
    if (pid === undefined) return;
    child.unref();
    resolve({ pid, startTime: readStat(pid)?.startTime ?? startTimeOfZombie(pid), ended });
  });
}

/** A child that has already exited is a zombie until reaped; its stat still has the time. */
function startTimeOfZombie(pid: number): number {
  const text = readKernelFile(`/proc/${pid}/stat`);
  if (text === null) return -1;
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return Number(rest[19]);
}

/** Why the working directory cannot be used, or null when it can. */
export async function checkWorkingDir(dir: string): Promise<string | null> {
  try {
    const info = await Deno.stat(dir);
    return info.isDirectory ? null : `working directory "${dir}" is not a directory`;
  } catch {
    return `working directory "${dir}" does not exist on this host`;
  }
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    const info = await Deno.stat(path);
    return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/**
 * Finds `program` as exec does: a name with a "/" relative to `cwd`, else the first
 * executable file of that name on `path` (an empty entry means `cwd`). Null: not found.
 */
export async function resolveProgram(
  program: string,
  path: string,
  cwd: string,
): Promise<string | null> {
  if (program === "") return null;
  if (program.includes("/")) {
    const full = program.startsWith("/") ? program : `${cwd}/${program}`;
    return await isExecutableFile(full) ? full : null;
  }
  for (const dir of path.split(":")) {
    const full = `${dir === "" ? cwd : dir}/${program}`;
    if (await isExecutableFile(full)) return full.startsWith("/") ? full : `${cwd}/${full}`;
  }
  return null;
}
