// One running (or reattached) attempt: follows its wrapper, tails its output, classifies
// its end and cancels it. What differs between the process and the Docker runner sits
// behind `AttemptControl`.

import { classifyExit } from "./classify_exit.ts";
import { type OomCounter, OomWatch } from "./_oom_counter.ts";
import { OutputTail } from "./output_tail.ts";
import { isSameProcess, ProcessTree, readStat } from "./_proc.ts";
import { exists, readExitStatus, readJsonOrNull, runFile, writeJsonAtomic } from "./run_dir.ts";
import { decodeExitStatus } from "./signals.ts";
import type { ExitInfo, HandleState, RunHandle, RunnerKind } from "./types.ts";
import type { JobRunner } from "../../protocol/vocabulary.ts";

/** The longest gap between two reads of a quiet attempt's output files. */
export const IDLE_POLL_MS = 500;
/** How often a cancel checks whether processes remain, in ms. */
const CANCEL_POLL_MS = 50;
/** How long to wait for our child's exit event when the wrapper left no status, in ms. */
const CHILD_EXIT_WAIT_MS = 1000;
/** Docker main pid lookups at every scan; later ones (an image pull is slow) every 10th. */
const MAIN_PID_QUICK_LOOKUPS = 20;
const MAIN_PID_SLOW_EVERY = 10;

/** What the process and Docker runners do differently once an attempt runs. */
export interface AttemptControl {
  readonly kind: JobRunner;
  /** Fields of `state()` besides the common ones (e.g. the container name). */
  stateFields(): Record<string, unknown>;
  /** Cancel, first step: ask every process of the attempt to stop. */
  terminate(tree: ProcessTree): Promise<void>;
  /** Cancel, after the grace period: kill whatever is left. */
  kill(tree: ProcessTree): Promise<void>;
  /** The job's main process when it is not the wrapper (Docker: the container's), or null. */
  findMainPid?(): Promise<number | null>;
  /**
   * Called once the wrapper has ended, before the end is classified: what the runner knows
   * of that end besides the exit status, after removing what the attempt left (Docker: the
   * container's state, then the container). `oomKilled` null: unknown.
   */
  settle?(): Promise<{ oomKilled: boolean | null }>;
}

/** Everything an attempt is made of. */
export interface AttemptInit {
  runId: string;
  runDir: string;
  control: AttemptControl;
  tail: OutputTail;
  /** The wrapper; null when it is already gone (a reattach after it ended). */
  wrapper: { pid: number; startTime: number } | null;
  /** Recorded in state; a wrapper pid from another boot is void. */
  bootId: string;
  oomCounter: OomCounter | null;
  /** How the wrapper ended, when it is this agent's child. */
  childEnded: Promise<{ code: number | null; signal: string | null }> | null;
  /** The state a reattach started from (its wrapper pid and start time are kept). */
  previous: { pid: number | null; startTime: number } | null;
  cancelled: boolean;
  pollMs: number;
  scanMs: number;
}

/** A started or reattached attempt. */
export class Attempt implements RunHandle {
  readonly run_id: string;
  readonly exited: Promise<ExitInfo>;
  readonly #init: AttemptInit;
  readonly #tree: ProcessTree;
  readonly #oom: OomWatch;
  readonly #wrapperPid: number | null;
  readonly #wrapperStart: number;
  #pid: number | null;
  #resolveExit: (info: ExitInfo) => void = () => {};
  /** Cancels the pending tick; undefined while a tick runs (or none is due). */
  #timer: (() => void) | undefined;
  #stopped = false;
  #detached = false;
  #finished = false;
  #cancelled: boolean;
  #cancelling: Promise<void> | null = null;
  #lastScan = 0;
  #mainPidLookups = 0;
  #childEnd: { code: number | null; signal: string | null } | null = null;
  #lastAliveCheck = 0;
  #idleTicks = 0;
  #aliveSeen = true;

  constructor(init: AttemptInit) {
    this.#init = init;
    this.run_id = init.runId;
    this.#cancelled = init.cancelled;
    this.exited = new Promise((resolve) => this.#resolveExit = resolve);
    this.#wrapperPid = init.wrapper?.pid ?? init.previous?.pid ?? null;
    this.#wrapperStart = init.wrapper?.startTime ?? init.previous?.startTime ?? -1;
    this.#tree = new ProcessTree(init.wrapper?.pid ?? null);
    if (init.wrapper) this.#tree.addRoot(init.wrapper.pid, init.wrapper.startTime);
    this.#oom = new OomWatch(init.oomCounter);
    this.#pid = init.control.findMainPid ? null : this.#wrapperPid;
    init.childEnded?.then((end) => {
      this.#childEnd = end;
      // Look now rather than at the next poll (a pending timer means no tick is running).
      if (this.#timer !== undefined) {
        this.#timer();
        this.#schedule(0);
      }
    });
    this.#schedule(0);
  }

  /** The job's main process: the wrapper (group leader), or the container's for Docker. */
  get pid(): number | null {
    return this.#pid;
  }

  state(): HandleState {
    return {
      run_id: this.run_id,
      runner: this.#init.control.kind,
      run_dir: this.#init.runDir,
      wrapper_pid: this.#wrapperPid,
      wrapper_start_time: this.#wrapperStart,
      boot_id: this.#init.bootId,
      oom_counter: this.#init.oomCounter,
      ...this.#init.control.stateFields(),
    };
  }

  pids(): number[] {
    this.#tree.scan();
    return this.#tree.alive();
  }

  cancel(grace_s: number): Promise<void> {
    this.#cancelling ??= this.#cancel(grace_s);
    return this.#cancelling;
  }

  /**
   * Stops following the attempt without touching its processes (the agent is shutting
   * down; a later agent reattaches). `exited` then never resolves.
   */
  detach(): void {
    this.#detached = true;
    this.#stopped = true;
    this.#init.tail.mute();
    this.#init.tail.close();
    this.#timer?.();
    this.#timer = undefined;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = onGrid(ms, () => this.#tick());
  }

  #wrapperAlive(): boolean {
    return this.#init.wrapper !== null &&
      isSameProcess(this.#init.wrapper.pid, this.#init.wrapper.startTime);
  }

  /**
   * The wrapper's liveness for the output poll. A wrapper this agent spawned reports its end
   * through the child's exit; one found after a restart is looked up in /proc, at most once
   * per scan interval, since each lookup can cost a process spawn (see _kernel_files.ts).
   */
  #wrapperAliveForPoll(): boolean {
    if (this.#init.childEnded) return this.#childEnd === null;
    const now = Date.now();
    if (now - this.#lastAliveCheck >= this.#init.scanMs) {
      this.#lastAliveCheck = now;
      this.#aliveSeen = this.#wrapperAlive();
    }
    return this.#aliveSeen;
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    if (this.#stopped) return;
    try {
      // Checked before reading: once the wrapper is gone, all the job wrote is on disk.
      const alive = this.#wrapperAliveForPoll();
      if (alive && Date.now() - this.#lastScan >= this.#init.scanMs) {
        this.#lastScan = Date.now();
        const running = this.#tree.scan();
        if (this.#init.oomCounter) this.#oom.observe(running);
        await this.#lookForMainPid();
      }
      const lines = await this.#init.tail.poll(false);
      this.#idleTicks = lines > 0 ? 0 : this.#idleTicks + 1;
      if (!alive) return await this.#finish();
    } catch {
      // A failed read or write (a full disk, say) is retried on the next tick.
    }
    // Quiet jobs are polled less often, up to IDLE_POLL_MS: each poll costs file reads, and an
    // agent runs many attempts. Output that starts again is picked up within that bound.
    this.#schedule(
      Math.min(
        this.#init.pollMs * (1 + this.#idleTicks),
        Math.max(IDLE_POLL_MS, this.#init.pollMs),
      ),
    );
  }

  async #lookForMainPid(): Promise<void> {
    const find = this.#init.control.findMainPid;
    if (!find || this.#pid !== null) return;
    const n = this.#mainPidLookups++;
    if (n >= MAIN_PID_QUICK_LOOKUPS && n % MAIN_PID_SLOW_EVERY !== 0) return;
    const pid = await find.call(this.#init.control);
    const stat = pid === null ? null : readStat(pid);
    if (pid === null || stat === null) return;
    this.#tree.addRoot(pid, stat.startTime);
    this.#tree.scan();
    this.#pid = pid;
  }

  async #finish(): Promise<void> {
    const { runDir, tail } = this.#init;
    await tail.poll(true);
    tail.close(); // all read: the lines it keeps for the end are in memory
    if (this.#detached) return;
    const saved = await readJsonOrNull(runFile(runDir, "exit"));
    if (this.#init.previous && isExitInfo(saved)) return this.#end(saved);

    const status = await readExitStatus(runDir);
    if (status === null && this.#init.childEnded && this.#childEnd === null) {
      await waitAtMost(this.#init.childEnded, CHILD_EXIT_WAIT_MS);
    }
    const end = status !== null
      ? decodeExitStatus(status)
      : { exit_code: this.#childEnd?.code ?? null, signal: this.#childEnd?.signal ?? null };
    const cancelled = this.#cancelled || await exists(runFile(runDir, "cancel"));
    const settled = await this.#init.control.settle?.() ?? null;
    // Read for every end, not only the main process's SIGKILL: a worker the OOM killer took
    // can make the main process exit with an error of its own.
    const oomKilled = cancelled || end.exit_code === 0
      ? null
      : settled?.oomKilled ?? this.#oom.killedSince();
    const log_tail = tail.recentLines();
    const verdict = classifyExit({
      ...end,
      cancelled,
      log_tail,
      oomKilled,
      runner: this.#init.control.kind,
    });
    const info: ExitInfo = { ...end, ...verdict, log_tail };
    await writeJsonAtomic(runFile(runDir, "exit"), info).catch(() => {});
    this.#end(info);
  }

  #end(info: ExitInfo): void {
    this.#init.tail.close();
    if (this.#detached) return;
    this.#finished = true;
    this.#stopped = true;
    this.#resolveExit(info);
  }

  async #cancel(grace_s: number): Promise<void> {
    const { control, runDir } = this.#init;
    if (!this.#finished) {
      this.#cancelled = true;
      await Deno.writeTextFile(runFile(runDir, "cancel"), new Date().toISOString()).catch(() => {});
    }
    this.#tree.scan(true);
    await control.terminate(this.#tree);
    const deadline = Date.now() + Math.max(0, grace_s) * 1000;
    let forced = false;
    for (;;) {
      this.#tree.scan(true);
      if (this.#tree.alive().length === 0 && !this.#wrapperAlive()) break;
      if (!forced && Date.now() >= deadline) {
        forced = true;
        await control.kill(this.#tree);
      } else if (forced) {
        // Anything forked since the last signal, or slow to die, gets it again.
        this.#tree.signalAll("SIGKILL");
      }
      await sleep(CANCEL_POLL_MS);
    }
    if (!this.#stopped) await this.exited;
  }
}

/** A handle for an attempt that never started (DISPATCH_FAILED). */
export async function failedAttempt(
  runId: string,
  kind: RunnerKind,
  runDir: string,
  reason: string,
): Promise<RunHandle> {
  const info: ExitInfo = {
    exit_code: null,
    signal: null,
    failure_class: "DISPATCH_FAILED",
    reason,
    log_tail: [],
  };
  await writeJsonAtomic(runFile(runDir, "exit"), info).catch(() => {});
  return {
    run_id: runId,
    pid: null,
    exited: Promise.resolve(info),
    state: () => ({ run_id: runId, runner: kind, run_dir: runDir, dispatch_failed: reason }),
    cancel: () => Promise.resolve(),
    pids: () => [],
    detach: () => {},
  };
}

export function isExitInfo(value: unknown): value is ExitInfo {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.reason === "string" && Array.isArray(v.log_tail) && "failure_class" in v;
}

/** Callbacks due at each moment on the clock grid, and the one timer that runs them. */
const dueAt = new Map<
  number,
  { callbacks: Set<() => void>; timer: ReturnType<typeof setTimeout> }
>();

/**
 * Runs `fn` at the next multiple of `ms` on the clock (at once for 0); returns what cancels
 * it. Attempts polling at one interval share a single timer: a timer firing costs the agent
 * about as much as a quiet attempt's poll.
 */
export function onGrid(ms: number, fn: () => void): () => void {
  if (ms <= 0) {
    const timer = setTimeout(fn, 0);
    return () => clearTimeout(timer);
  }
  const now = Date.now();
  const delay = alignedDelay(ms, now);
  const at = now + delay;
  let due = dueAt.get(at);
  if (due === undefined) {
    const callbacks = new Set<() => void>();
    const timer = setTimeout(() => {
      dueAt.delete(at);
      for (const callback of callbacks) callback();
    }, delay);
    due = { callbacks, timer };
    dueAt.set(at, due);
  }
  const slot = due;
  slot.callbacks.add(fn);
  return () => {
    slot.callbacks.delete(fn);
    if (slot.callbacks.size === 0 && dueAt.get(at) === slot) {
      clearTimeout(slot.timer);
      dueAt.delete(at);
    }
  };
}

/**
 * The delay to the next multiple of `ms` on the clock. Every attempt polling at the same
 * interval then wakes in the same turn of the event loop: each wake-up costs the agent
 * about as much as a poll, and an agent runs many attempts.
 */
export function alignedDelay(ms: number, now = Date.now()): number {
  return ms <= 0 ? 0 : ms - (now % ms);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Waits for `promise`, but no longer than `ms` (and leaves no timer behind). */
async function waitAtMost(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([promise, new Promise((resolve) => timer = setTimeout(resolve, ms))]);
  clearTimeout(timer);
}
