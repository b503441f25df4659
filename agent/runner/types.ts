/**
 * What the agent asks of a runner (process, Docker or Slurm), and what a runner gives back.
 * The process and Docker runners implement this one interface and pass one conformance
 * suite; the Slurm runner hands the job to a cluster scheduler and reports when it starts.
 */
import type { FailureClass } from "../../protocol/vocabulary.ts";
import type { JobRunner, RunnerKind } from "../../protocol/vocabulary.ts";

/** One attempt of a job, as the runner needs it. */
export interface RunSpec {
  run_id: string;
  job_id: string;
  attempt: number;
  /** argv, or a shell string when `shell` is true (run with `bash -lc`). */
  command: string[] | string;
  shell: boolean;
  /** Interpreted on this host; checked before start (missing → DISPATCH_FAILED). */
  working_dir: string;
  /** The complete environment additions for the job (the caller adds CUDA_VISIBLE_DEVICES, GPUCTL_*, PYTHONPATH …). */
  env: Record<string, string>;
  gpu_indices: number[];
  runner: JobRunner;
  image: string | null;
  /** `<agent_data>/runs/<run_id>`: the runner keeps its files here (output.log, exit status, pids). */
  run_dir: string;
  /** Seconds between SIGTERM and SIGKILL on cancel. */
  grace_s: number;
}

/** One line of the job's output. `seq` counts lines from 1 across both streams. */
export interface OutputLine {
  seq: number;
  /** ISO 8601 time the agent read the line. */
  ts: string;
  stream: "stdout" | "stderr";
  text: string;
}

/** How an attempt ended. `failure_class` is null when it succeeded (exit code 0). */
export interface ExitInfo {
  exit_code: number | null;
  signal: string | null;
  failure_class: FailureClass | null;
  reason: string;
  /** The last lines of output (at most 100), for diagnosis. */
  log_tail: string[];
}

/** A JSON-serialisable description of a running attempt, kept in the agent's state file. */
export type HandleState = Record<string, unknown> & {
  run_id: string;
  runner: RunnerKind;
};

/** The runners an agent can have. */
export type { RunnerKind };

/** An attempt waiting in a cluster scheduler's queue (Slurm). */
export interface QueuedInfo {
  slurm_job_id: string;
  /** Why it waits, for people (`Slurm: pending (Resources)`). */
  reason: string;
}

/** Where a cluster scheduler started an attempt (Slurm). */
export interface Placement {
  slurm_job_id: string;
  /** The host it runs on. */
  node_name: string | null;
  /** The GPU indices bound on that host; null when unknown. */
  gpu_indices: number[] | null;
}

export interface RunHooks {
  /** Called for every output line, in order, exactly once per line across reattaches. */
  onLine(line: OutputLine): void;
  /** The attempt waits in a cluster scheduler's queue; called again when the reason changes. */
  onQueued?(info: QueuedInfo): void;
}

/** A started (or reattached) attempt. */
export interface RunHandle {
  readonly run_id: string;
  /** The job's main process (the process group leader), or null for Docker before it started. */
  readonly pid: number | null;
  /** What the agent must persist to reattach after its own restart. */
  state(): HandleState;
  /**
   * Resolves when the job's processes started, with where, for a runner that hands the job
   * to a cluster scheduler (absent: the processes started with `start()`). Never resolves
   * for an attempt that ended without starting.
   */
  readonly started?: Promise<Placement>;
  /** Resolves once the attempt ended and all its output lines were delivered. */
  readonly exited: Promise<ExitInfo>;
  /**
   * SIGTERM to the whole process group (and to descendants that left it), SIGKILL after
   * `grace_s`; resolves when no process of the attempt remains. The exit is then CANCELLED.
   */
  cancel(grace_s: number): Promise<void>;
  /** Pids of every live process of the attempt (for telling owned GPU processes from foreign ones). */
  pids(): number[];
  /**
   * Stops following the attempt and leaves its processes running (the agent is shutting
   * down; the next agent reattaches from `state()`). `exited` then never resolves.
   */
  detach(): void;
}

export interface Runner {
  readonly kind: RunnerKind;
  /** Starts an attempt; a missing working dir or program ends it at once with DISPATCH_FAILED. */
  start(spec: RunSpec, hooks: RunHooks): Promise<RunHandle>;
  /**
   * Reattaches to an attempt that outlived the agent (from `state()`), resuming its output
   * after the last delivered line. When the process is gone, the handle's `exited` resolves
   * with whatever exit information the run dir holds (failure class AGENT_RESTART when none).
   */
  reattach(state: HandleState, hooks: RunHooks, lastDeliveredSeq: number): Promise<RunHandle>;
  /**
   * Finds an attempt that an earlier agent process started but never recorded (it stopped
   * during `start()`), or null when there is none. Only runners that hand jobs to another
   * system have one: a Slurm job may have been submitted though its id was never saved.
   */
  recover?(spec: RunSpec, hooks: RunHooks): Promise<RunHandle | null>;
}
