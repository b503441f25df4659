// The Docker runner: the job runs in a container started by `docker run` under the same
// wrapper as a process job, so output capture, exit status and reattach work the same way.
// The container is not started with `--rm`: once `docker run` has ended, the agent reads
// the container's state (`OOMKilled`: the container's own cgroup, which the `docker run`
// client is not in) and then removes it, also after a restart of its own.

import { type AttemptControl, failedAttempt } from "./_attempt.ts";
import { resolveProgram } from "./_launch.ts";
import { runTool } from "./_tool.ts";
import { parseHandleState, reattachAttempt, startAttempt } from "./_lifecycle.ts";
import { prepareRunDir, resolveRunnerOptions, type RunnerOptions } from "./_options.ts";
import type { ProcessTree } from "./_proc.ts";
import type { JobUser } from "./job_user.ts";
import { readJsonOrNull, runFile } from "./run_dir.ts";
import type { HandleState, RunHandle, RunHooks, Runner, RunSpec } from "./types.ts";

/** Options of {@linkcode createDockerRunner}; every field is optional. */
export interface DockerRunnerOptions extends RunnerOptions {
  /** The docker CLI: a path, or a name looked up on the job's PATH. @default "docker" */
  docker?: string;
  /**
   * Host folders mounted read-only at the same path in every container: gpuctl's Python SDK,
   * so the PYTHONPATH the job gets works inside the container too. @default []
   */
  readOnlyMounts?: string[];
  /**
   * Grant a job its GPUs with `--gpus "device=…"`, which needs the NVIDIA container runtime.
   * False for fake GPUs, which no runtime can grant: `--gpus` is left out and the job's
   * CUDA_VISIBLE_DEVICES keeps the host's indices of its slots. @default true
   */
  gpus?: boolean;
  /**
   * More `docker run` options, before the image (`["--memory", "16g", "--shm-size", "8g"]`).
   * @default []
   */
  runArgs?: string[];
}

/** The label every container of the runner carries: `docker ps -a --filter label=gpuctl.run_id`. */
export const RUN_ID_LABEL = "gpuctl.run_id";

/** The container's name for a run: `gpuctl-<run_id>` (characters Docker refuses become "-"). */
export function containerName(runId: string): string {
  return `gpuctl-${runId.replace(/[^a-zA-Z0-9_.-]/g, "-")}`;
}

/** The name of the file in the run dir where the variables wait for `docker run --env-file`. */
const DOCKER_ENV_FILE = "docker.env";

/** Where an attempt's variables wait for `docker run --env-file` (removed once it started). */
export function dockerEnvFile(spec: RunSpec): string {
  return `${spec.run_dir}/${DOCKER_ENV_FILE}`;
}

/**
 * The container's variables: the job's, with a CUDA_VISIBLE_DEVICES that names its host GPUs
 * renumbered 0…n-1, because inside a container started with `--gpus` the granted GPUs are
 * the only ones CUDA sees, numbered from 0. Without `--gpus` (`gpus` false) nothing is
 * renumbered.
 */
export function containerEnv(spec: RunSpec, gpus = true): Record<string, string> {
  const hostDevices = spec.gpu_indices.join(",");
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(spec.env)) {
    env[name] = gpus && name === "CUDA_VISIBLE_DEVICES" && value === hostDevices
      ? spec.gpu_indices.map((_, i) => i).join(",")
      : value;
  }
  return env;
}

/** What `docker run` takes from the runner's options. */
export interface DockerRunOptions {
  /** See {@linkcode DockerRunnerOptions.readOnlyMounts}. */
  readOnlyMounts?: string[];
  /** The job user: the container runs with `--user uid:gid`. */
  jobUser?: JobUser | null;
  /** See {@linkcode DockerRunnerOptions.gpus}. @default true */
  gpus?: boolean;
  /** See {@linkcode DockerRunnerOptions.runArgs}. */
  runArgs?: string[];
}

/**
 * The arguments of `docker run` for an attempt. Each is one argv item: nothing passes
 * through a shell. The job's variables go through `--env-file` (see `containerEnv`), never
 * as `--env NAME=value`, which every user of the host could read in `ps`. The container
 * shares the host's network, so the SDK reaches the agent's ingest endpoint and the server
 * at the same 127.0.0.1 addresses as a process job would (the way multi-GPU training
 * containers are usually run anyway).
 */
export function dockerRunArgs(spec: RunSpec, options: DockerRunOptions = {}): string[] {
  const dir = spec.working_dir;
  const name = containerName(spec.run_id);
  const args = ["run", "--name", name, "--label", `${RUN_ID_LABEL}=${spec.run_id}`];
  args.push("--network", "host");
  // The job user's ids, so the mounted folders are reached as that user, not as root.
  if (options.jobUser) args.push("--user", `${options.jobUser.uid}:${options.jobUser.gid}`);
  if (spec.gpu_indices.length > 0 && options.gpus !== false) {
    // Docker reads the --gpus value as CSV: unquoted, "device=0,1" would grant only GPU 0.
    args.push("--gpus", `"device=${spec.gpu_indices.join(",")}"`);
  }
  args.push("-v", `${dir}:${dir}`);
  // The run's own folder (checkpoints, and what the SDK keeps until the agent takes it).
  const runDir = spec.env.GPUCTL_RUN_DIR;
  if (runDir && runDir !== dir && !runDir.includes(":")) args.push("-v", `${runDir}:${runDir}`);
  for (const mount of options.readOnlyMounts ?? []) {
    if (mount !== dir && !mount.includes(":")) args.push("-v", `${mount}:${mount}:ro`);
  }
  args.push("-w", dir, "--env-file", dockerEnvFile(spec), ...options.runArgs ?? []);
  args.push(spec.image ?? "");
  if (typeof spec.command === "string") args.push("bash", "-lc", spec.command);
  else if (spec.shell) args.push("bash", "-lc", spec.command.join(" "));
  else args.push(...spec.command);
  return args;
}

/** Why `spec` cannot run in a container, or null. */
function checkDockerSpec(spec: RunSpec): string | null {
  if (!spec.image) return "no image was given for a docker job";
  if (spec.image.startsWith("-")) return `image "${spec.image}" is not an image name`;
  if (spec.working_dir.includes(":")) {
    return `working directory "${spec.working_dir}" contains ":", which docker -v cannot mount`;
  }
  const multiLine = Object.entries(spec.env).find(([, value]) => /[\r\n]/.test(value));
  if (multiLine) {
    return `env ${multiLine[0]} holds a line break, which docker --env-file cannot pass`;
  }
  const argv = typeof spec.command === "string" ? [spec.command] : spec.command;
  return argv.length === 0 || argv[0] === "" ? "the command is empty" : null;
}

/** Runs the docker CLI; its exit status and output (never throws). */
function runDocker(docker: string, args: string[], env: Record<string, string>) {
  return runTool(docker, args, env);
}

/**
 * Cancel of a container: `docker kill --signal TERM`, then `docker kill` after the grace
 * period. Processes of the attempt still alive on this host after that are killed too.
 */
function dockerControl(
  docker: string,
  name: string,
  env: Record<string, string>,
  envFile: string,
): AttemptControl {
  return {
    kind: "docker",
    stateFields: () => ({ container: name, docker }),
    async terminate(tree: ProcessTree): Promise<void> {
      const killed = await runDocker(docker, ["kill", "--signal", "TERM", name], env);
      // No container (yet): the `docker run` client is told instead; it stops the pull or
      // forwards the signal.
      if (!killed.ok) tree.signalAll("SIGTERM");
    },
    async kill(tree: ProcessTree): Promise<void> {
      await runDocker(docker, ["kill", name], env);
      tree.signalAll("SIGKILL");
    },
    async findMainPid(): Promise<number | null> {
      const out = await runDocker(docker, ["inspect", "--format", "{{.State.Pid}}", name], env);
      const pid = Number.parseInt(out.stdout.trim(), 10);
      if (!out.ok || !(pid > 0)) return null;
      // The container exists: docker has read the variables, which need not wait on disk.
      await Deno.remove(envFile).catch(() => {});
      return pid;
    },
    async settle(): Promise<{ oomKilled: boolean | null }> {
      await Deno.remove(envFile).catch(() => {});
      const state = await containerState(docker, name, env);
      // Forced: a container whose `docker run` client was killed (with the agent's own
      // cgroup, say) runs on with no one reading its output; it ends here, not as an orphan.
      if (state !== null) await runDocker(docker, ["rm", "--force", name], env);
      return { oomKilled: state?.OOMKilled ?? null };
    },
  };
}

/** The field of `docker inspect`'s `.State` the runner reads. */
interface ContainerState {
  /** The kernel's OOM killer struck in the container's cgroup (its `--memory` limit). */
  OOMKilled: boolean;
}

/** The container's state, or null when there is no such container (or no daemon). */
async function containerState(
  docker: string,
  name: string,
  env: Record<string, string>,
): Promise<ContainerState | null> {
  const out = await runDocker(docker, ["inspect", "--format", "{{json .State}}", name], env);
  if (!out.ok) return null;
  try {
    const state = JSON.parse(out.stdout);
    return typeof state === "object" && state !== null && typeof state.OOMKilled === "boolean"
      ? state
      : null;
  } catch {
    return null;
  }
}

/** A runner that starts each attempt as `docker run --name gpuctl-<run_id> …`. */
export function createDockerRunner(options: DockerRunnerOptions = {}): Runner {
  const resolved = resolveRunnerOptions(options);
  const dockerName = options.docker ?? "docker";
  const gpus = options.gpus ?? true;
  return {
    kind: "docker",
    async start(spec: RunSpec, hooks: RunHooks): Promise<RunHandle> {
      const path = spec.env.PATH ?? resolved.agentEnv.PATH ?? "";
      const docker = await resolveProgram(dockerName, path, spec.working_dir);
      const problem = await prepareRunDir(spec) ?? checkDockerSpec(spec) ??
        (docker === null
          ? `the docker CLI "${dockerName}" was not found on PATH ("${path}")`
          : null);
      if (problem !== null || docker === null) {
        return failedAttempt(spec.run_id, "docker", spec.run_dir, problem ?? "");
      }
      const name = containerName(spec.run_id);
      const envText = Object.entries(containerEnv(spec, gpus)).map(([k, v]) => `${k}=${v}\n`)
        .join("");
      await Deno.writeTextFile(dockerEnvFile(spec), envText, { mode: 0o600 });
      return startAttempt({
        spec,
        hooks,
        bash: await resolved.bash(),
        argv: [
          docker,
          ...dockerRunArgs(spec, {
            readOnlyMounts: options.readOnlyMounts,
            jobUser: resolved.jobUser,
            gpus,
            runArgs: options.runArgs,
          }),
        ],
        // The docker CLI is the agent's tool (DOCKER_HOST, its config): the container gets
        // only the job's variables, named in `docker run`.
        env: resolved.agentEnv,
        jobEnv: {},
        control: dockerControl(docker, name, resolved.agentEnv, dockerEnvFile(spec)),
        trackOom: false,
      }, resolved);
    },
    async reattach(
      state: HandleState,
      hooks: RunHooks,
      lastDeliveredSeq: number,
    ): Promise<RunHandle> {
      const parsed = parseHandleState(state, "docker");
      const name = typeof state.container === "string"
        ? state.container
        : containerName(parsed.run_id);
      const docker = typeof state.docker === "string" ? state.docker : dockerName;
      const control = dockerControl(
        docker,
        name,
        resolved.agentEnv,
        `${parsed.run_dir}/${DOCKER_ENV_FILE}`,
      );
      return await reattachAttempt(parsed, hooks, lastDeliveredSeq, control, resolved);
    },
    /**
     * The agent stopped while starting `spec`: when the attempt got as far as its handle
     * file, it is followed again from there; otherwise a container it may have started is
     * removed (null: the attempt is lost), so that none runs on with no one following it.
     */
    async recover(spec: RunSpec, hooks: RunHooks): Promise<RunHandle | null> {
      const saved = await readJsonOrNull(runFile(spec.run_dir, "handle"));
      if (typeof saved === "object" && saved !== null && "run_id" in saved) {
        return await this.reattach(saved as HandleState, hooks, 0);
      }
      const path = spec.env.PATH ?? resolved.agentEnv.PATH ?? "";
      const docker = await resolveProgram(dockerName, path, "/");
      if (docker !== null) {
        const name = containerName(spec.run_id);
        await runDocker(docker, ["rm", "--force", name], resolved.agentEnv);
      }
      return null;
    },
  };
}
