// The process runner: the job runs as a plain process tree on this host (DESIGN.md,
// red line 3: first class).

import { failedAttempt } from "./_attempt.ts";
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
 * in its run dir, so that it outlives the agent and can be reattached.
 */
export function createProcessRunner(options: ProcessRunnerOptions = {}): Runner {
  const resolved = resolveRunnerOptions(options);
  return {
    kind: "process",
    async start(spec: RunSpec, hooks: RunHooks): Promise<RunHandle> {
      const env = { ...resolved.baseEnv, ...spec.env };
      const argv = typeof spec.command === "string" || spec.shell ? null : spec.command;
      const problem = await prepareRunDir(spec) ??
        (argv ? await checkProgram(argv[0], env.PATH ?? "", spec.working_dir) : null);
      if (problem !== null) return failedAttempt(spec.run_id, "process", spec.run_dir, problem);
      const bash = await resolved.bash();
      return startAttempt({
        spec,
        hooks,
        bash,
        argv: commandArgv(spec, bash),
        env,
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
