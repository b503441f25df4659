// Starting an attempt and reattaching to one: the steps both runners share.

import { z } from "zod";
import { Attempt, type AttemptControl, failedAttempt } from "./_attempt.ts";
import { launchWrapper } from "./_launch.ts";
import { openOomCounter } from "./_oom_counter.ts";
import { OutputTail } from "./output_tail.ts";
import { isLocalDevice } from "../local_fs.ts";
import { bootId, isSameProcess } from "./_proc.ts";
import { exists, runFile, writeJsonAtomic } from "./run_dir.ts";
import type { HandleState, RunHandle, RunHooks, RunSpec } from "./types.ts";
import { JOB_RUNNERS, type JobRunner } from "../../protocol/vocabulary.ts";

/** Timing and clock, resolved from a runner's options. */
export interface LoopOptions {
  pollMs: number;
  scanMs: number;
  now: () => Date;
}

/** A ready-to-run attempt: what the wrapper runs, with which environment. */
export interface StartPlan {
  spec: RunSpec;
  hooks: RunHooks;
  bash: string;
  /** The argv the wrapper runs (the job itself, or `docker run …`). */
  argv: string[];
  /** The wrapper's complete environment. */
  env: Record<string, string>;
  /** Variables set in the job's own process (see ENV_LOADER_SCRIPT). */
  jobEnv: Record<string, string>;
  control: AttemptControl;
  /** Read the cgroup OOM-kill counter (not for Docker: the container has its own cgroup). */
  trackOom: boolean;
}

/** Starts the wrapper for `plan` and follows it. */
export async function startAttempt(plan: StartPlan, options: LoopOptions): Promise<RunHandle> {
  const { spec, control } = plan;
  // A run dir reused by a second dispatch of the same run must not show the first's end.
  for (const stale of ["exitStatus", "exit", "cancel"] as const) {
    await Deno.remove(runFile(spec.run_dir, stale)).catch(() => {});
  }
  const tail = await OutputTail.create({
    runDir: spec.run_dir,
    hooks: plan.hooks,
    now: options.now,
    localDevice: isLocalDevice,
  });
  let launched;
  try {
    launched = await launchWrapper({
      bash: plan.bash,
      runDir: spec.run_dir,
      argv: plan.argv,
      cwd: spec.working_dir,
      env: plan.env,
      jobEnv: plan.jobEnv,
    });
  } catch (err) {
    return failedAttempt(spec.run_id, control.kind, spec.run_dir, (err as Error).message);
  }
  const boot = bootId();
  await writeJsonAtomic(runFile(spec.run_dir, "pid"), {
    pid: launched.pid,
    pgid: launched.pid,
    start_time: launched.startTime,
    boot_id: boot,
    started_at: options.now().toISOString(),
  });
  const attempt = new Attempt({
    runId: spec.run_id,
    runDir: spec.run_dir,
    control,
    tail,
    wrapper: launched.startTime >= 0 ? { pid: launched.pid, startTime: launched.startTime } : null,
    bootId: boot,
    oomCounter: plan.trackOom ? openOomCounter(launched.pid) : null,
    childEnded: launched.ended,
    previous: null,
    cancelled: false,
    pollMs: options.pollMs,
    scanMs: options.scanMs,
  });
  await writeJsonAtomic(runFile(spec.run_dir, "handle"), attempt.state());
  return attempt;
}

const handleStateSchema = z.looseObject({
  run_id: z.string().min(1),
  runner: z.enum(JOB_RUNNERS),
  run_dir: z.string().min(1),
  wrapper_pid: z.number().int().positive().nullable().optional(),
  wrapper_start_time: z.number().int().optional(),
  boot_id: z.string().optional(),
  oom_counter: z.object({ file: z.string(), base: z.number() }).nullable().optional(),
  dispatch_failed: z.string().optional(),
});

/** The common fields of a handle state, checked. */
export type ParsedHandleState = z.infer<typeof handleStateSchema>;

/** Checks a state from `RunHandle.state()`; throws naming the field that is wrong. */
export function parseHandleState(
  state: HandleState,
  kind: JobRunner,
): ParsedHandleState {
  const parsed = handleStateSchema.safeParse(state);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `Cannot reattach run "${String(state?.run_id)}": state field "${
        issue.path.join(".")
      }" ${issue.message}`,
    );
  }
  if (parsed.data.runner !== kind) {
    throw new Error(
      `Cannot reattach run "${parsed.data.run_id}": it ran under the ${parsed.data.runner} runner, not ${kind}`,
    );
  }
  return parsed.data;
}

/** Follows an attempt started by an earlier agent process again. */
export async function reattachAttempt(
  state: ParsedHandleState,
  hooks: RunHooks,
  lastDeliveredSeq: number,
  control: AttemptControl,
  options: LoopOptions,
): Promise<RunHandle> {
  const runDir = state.run_dir;
  if (state.dispatch_failed !== undefined) {
    return failedAttempt(state.run_id, control.kind, runDir, state.dispatch_failed);
  }
  const tail = await OutputTail.resume(
    { runDir, hooks, now: options.now, localDevice: isLocalDevice },
    lastDeliveredSeq,
  );
  const pid = state.wrapper_pid ?? null;
  const startTime = state.wrapper_start_time ?? -1;
  const boot = bootId();
  const alive = pid !== null && state.boot_id === boot && isSameProcess(pid, startTime);
  return new Attempt({
    runId: state.run_id,
    runDir,
    control,
    tail,
    wrapper: alive ? { pid, startTime } : null,
    bootId: state.boot_id ?? boot,
    oomCounter: state.oom_counter ?? null,
    childEnded: null,
    previous: { pid, startTime },
    cancelled: await exists(runFile(runDir, "cancel")),
    pollMs: options.pollMs,
    scanMs: options.scanMs,
  });
}
