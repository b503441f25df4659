// The process runner: the job runs as a plain process tree on this host (DESIGN.md,
// red line 3: first class).

import { failedAttempt } from "./_attempt.ts";
import { ENV_LOADER_SCRIPT } from "./_launch.ts";
import { switchUserArgv } from "./job_user.ts";
import { parseHandleState, reattachAttempt, startAttempt } from "./_lifecycle.ts";
import {
  checkProgram,
  commandArgv,
  prepareRunDir,
  resolveRunnerOptions,
  type RunnerOptions,
} from "./_options.ts";
import type { AttemptControl } from "./_attempt.ts";
import type { HandleState, RunHandle, RunHooks, Runner, RunSpec } from "./types.ts";

/** Options of {@linkcode createProcessRunner}; every field is optional. */
export type ProcessRunnerOptions = RunnerOptions;

/** Cancel of a process attempt: its group and stray descendants, SIGTERM then SIGKILL. */
const processControl: AttemptControl = {
  kind: "process",
  stateFields: () => ({}),
  terminate: (tree) => Promise.resolve(tree.signalAll("SIGTERM")),
  kill: (tree) => Promise.resolve(tree.signalAll("SIGKILL")),
};

/**
 * A runner that starts each attempt as a detached process tree whose output goes to files
 * in its run dir, so that it outlives the agent and can be reattached. The job's process
 * gets the job base environment (base_env.ts) and its own variables, never the agent's
 * environment, and runs as the job user when one is set.
 */
export function createProcessRunner(options: ProcessRunnerOptions = {}): Runner {
  const resolved = resolveRunnerOptions(options);
  return {
    kind: "process",
    async start(spec: RunSpec, hooks: RunHooks): Promise<RunHandle> {
      const path = spec.env.PATH ?? resolved.jobBaseEnv.PATH ?? "";
      const argv = typeof spec.command === "string" || spec.shell ? null : spec.command;
      const user = resolved.jobUser;
      const setpriv = user ? await resolved.setpriv() : null;
      const problem = await prepareRunDir(spec) ??
        (user && setpriv === null
          ? `setpriv (util-linux) was not found on the agent's PATH; it is needed to run jobs as job_user "${user.name}"`
          : null) ??
        (argv ? await checkProgram(argv[0], path, spec.working_dir) : null);
      if (problem !== null) return failedAttempt(spec.run_id, "process", spec.run_dir, problem);
      const bash = await resolved.bash();
      return startAttempt({
        spec,
        hooks,
        bash,
        argv: [
          ...(user && setpriv ? switchUserArgv(setpriv, user) : []),
          bash,
          "-c",
          ENV_LOADER_SCRIPT,
          "gpuctl-job",
          ...commandArgv(spec, bash),
        ],
        env: resolved.jobBaseEnv,
        jobEnv: spec.env,
        control: processControl,
        trackOom: true,
      }, resolved);
    },
    async reattach(
      state: HandleState,
      hooks: RunHooks,
      lastDeliveredSeq: number,
    ): Promise<RunHandle> {
      const parsed = parseHandleState(state, "process");
      return await reattachAttempt(parsed, hooks, lastDeliveredSeq, processControl, resolved);
    },
  };
}
