/** Fixtures shared by the agent's tests. */
import type { DispatchSpec } from "../protocol/agent.ts";
import type {
  ExitInfo,
  HandleState,
  RunHandle,
  RunHooks,
  Runner,
  RunSpec,
} from "./runner/types.ts";

/** A dispatch of a CPU-only process job, with `overrides` applied. */
export function dispatchSpec(overrides: Partial<DispatchSpec> = {}): DispatchSpec {
  return {
    job_id: "j-1",
    attempt: 2,
    run_id: "r-abc",
    name: "train",
    kind: "TRAIN",
    project: "proj",
    experiment: "exp",
    command: ["python3", "train.py"],
    shell: false,
    working_dir: "/work",
    env: {},
    gpu_indices: [],
    runner: "process",
    image: null,
    tensorboard_dir: null,
    checkpoint_dir: null,
    grace_s: 5,
    max_steps: null,
    ...overrides,
  };
}

/** A scripted attempt: the test writes its lines and decides how it ends. */
export class FakeHandle implements RunHandle {
  readonly run_id: string;
  readonly pid: number | null;
  readonly exited: Promise<ExitInfo>;
  readonly cancels: number[] = [];
  detached = false;
  /** When false, `cancel` only records the call (a job slow to stop). */
  cancelEnds = true;
  #hooks: RunHooks;
  #seq: number;
  #end!: (exit: ExitInfo) => void;

  constructor(
    runId: string,
    hooks: RunHooks,
    options: { pid?: number | null; lastSeq?: number } = {},
  ) {
    this.run_id = runId;
    this.pid = options.pid === undefined ? 4242 : options.pid;
    this.#hooks = hooks;
    this.#seq = options.lastSeq ?? 0;
    this.exited = new Promise((resolve) => this.#end = resolve);
  }

  /** Delivers output lines, numbered on from the last one. */
  print(...texts: string[]): void {
    for (const text of texts) {
      this.#hooks.onLine({
        seq: ++this.#seq,
        ts: new Date(0).toISOString(),
        stream: "stdout",
        text,
      });
    }
  }

  end(exit: Partial<ExitInfo> = {}): void {
    this.#end({
      exit_code: 0,
      signal: null,
      failure_class: null,
      reason: "exited with code 0",
      log_tail: [],
      ...exit,
    });
  }

  state(): HandleState {
    return { run_id: this.run_id, runner: "process", fake: true };
  }

  cancel(graceS: number): Promise<void> {
    this.cancels.push(graceS);
    if (this.cancelEnds) {
      this.end({
        exit_code: null,
        signal: "SIGTERM",
        failure_class: "CANCELLED",
        reason: "cancelled",
      });
    }
    return Promise.resolve();
  }

  pids(): number[] {
    return this.pid === null ? [] : [this.pid];
  }

  detach(): void {
    this.detached = true;
  }
}

/** A runner whose attempts are {@linkcode FakeHandle}s. */
export class FakeRunner implements Runner {
  readonly kind = "process" as const;
  readonly started: { spec: RunSpec; handle: FakeHandle }[] = [];
  readonly reattached: { state: HandleState; lastSeq: number; handle: FakeHandle }[] = [];
  /** When set, `start` returns an attempt that already ended with DISPATCH_FAILED. */
  failStart: string | null = null;
  /** When set, `reattach` finds the attempt ended this way. */
  reattachEnded: Partial<ExitInfo> | null = null;

  start(spec: RunSpec, hooks: RunHooks): Promise<RunHandle> {
    const handle = new FakeHandle(spec.run_id, hooks, { pid: this.failStart ? null : 4242 });
    if (this.failStart) {
      handle.end({ exit_code: null, failure_class: "DISPATCH_FAILED", reason: this.failStart });
    }
    this.started.push({ spec, handle });
    return Promise.resolve(handle);
  }

  reattach(state: HandleState, hooks: RunHooks, lastSeq: number): Promise<RunHandle> {
    const handle = new FakeHandle(state.run_id, hooks, { lastSeq });
    if (this.reattachEnded) handle.end(this.reattachEnded);
    this.reattached.push({ state, lastSeq, handle });
    return Promise.resolve(handle);
  }
}
