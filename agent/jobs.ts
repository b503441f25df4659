/**
 * The attempts this agent runs: dispatch and cancel from the server, reattach after an agent
 * restart (from `<data_dir>/state.json`), one loop polling their TensorBoard and checkpoint
 * folders, and the state file written after every change.
 */
import type { DispatchSpec, OwnedProcess } from "../protocol/agent.ts";
import { type AttemptDeps, ManagedAttempt } from "./attempt.ts";
import type { JobFiles } from "./job_files.ts";
import type { AttemptRef, NewDataFrame } from "./frames.ts";
import type { Logger } from "./log.ts";
import type { Runner } from "./runner/types.ts";
import { onGrid, readStat } from "./runner/mod.ts";
import { loadState, StateWriter } from "./state_file.ts";
import type { TelemetryJob } from "./telemetry.ts";
import type { JobRunner } from "../protocol/vocabulary.ts";

/** Parents walked up from an event file's writer to find the attempt it belongs to. */
const MAX_ANCESTRY = 64;

/** How often the TensorBoard and checkpoint folders are polled (points reach the server within 2 s). */
export const WATCH_POLL_MS = 1000;

/** How often the lease is checked: the server's margin covers this delay. */
export const FENCE_CHECK_MS = 1000;

/** The lease file is rewritten at most this often. */
const LEASE_PERSIST_MS = 1000;

/** Options of {@linkcode JobManager}. */
export interface JobManagerOptions {
  dataDir: string;
  /** The runner of each kind a job may name; null where this node has none. */
  runners: Record<JobRunner, Runner | null>;
  emit(frame: NewDataFrame): Promise<unknown>;
  jobEnv(spec: DispatchSpec): Record<string, string>;
  /** File steps in jobs' folders, with the jobs' rights. @default the agent's own */
  files?: JobFiles;
  log: Logger;
  /** Unix ms. @default Date.now */
  now?: () => number;
  /** @default WATCH_POLL_MS */
  watchPollMs?: number;
  /** Milliseconds between log flushes. @default 250 */
  logFlushMs?: number;
  /**
   * The lease: out of contact with the server longer than this, the agent stops its jobs
   * (the server starts their next attempts only after that). Null: never.
   */
  fenceAfterS?: number | null;
  /** A monotonic clock in ms for the lease. @default performance.now */
  monotonic?: () => number;
  /** Takes the code snapshot of a job's working dir before it starts. @default none taken */
  snapshotCode?: AttemptDeps["snapshotCode"];
}

const key = (jobId: string, attempt: number) => `${jobId}#${attempt}`;

/**
 * The longest a progress save waits (see #saveSoon): each save writes the whole state file,
 * and with jobs writing scalars all the time there is progress at every poll.
 */
export const PROGRESS_SAVE_MS = 5000;

/** Runs, follows and persists this agent's attempts. */
export class JobManager {
  #options: JobManagerOptions;
  #attempts = new Map<string, ManagedAttempt>();
  #runs = new Map<string, Promise<unknown>>();
  #writer: StateWriter;
  /** Cancels the next folder poll. */
  #timer: (() => void) | null = null;
  #saveTimer: ReturnType<typeof setTimeout> | null = null;
  #polling: Promise<void> = Promise.resolve();
  #stopped = false;
  /** When the lease was last renewed (monotonic ms): the send time of a frame the server answered. */
  #leaseRenewed: number;
  /** Cancels the next lease check. */
  #leaseTimer: (() => void) | null = null;
  #leasePersisted = -Infinity;

  constructor(options: JobManagerOptions) {
    this.#options = options;
    this.#writer = new StateWriter(
      this.statePath,
      () => ({ version: 1, attempts: [...this.#attempts.values()].map((a) => a.persisted()) }),
      (err) => options.log.error("cannot write the state file", { error: String(err) }),
    );
    this.#leaseRenewed = this.#monotonic();
  }

  #monotonic(): number {
    return (this.#options.monotonic ?? (() => performance.now()))();
  }

  /** `<data_dir>/lease.json`: when the lease was last renewed, so a restarted agent keeps counting. */
  get leasePath(): string {
    return `${this.#options.dataDir}/lease.json`;
  }

  /**
   * The server heard a frame this agent sent at `sentAt` (monotonic ms), or refused the
   * connection outright (nothing listens: a server that is down cannot requeue anything).
   */
  renewLease(sentAt: number): void {
    if (sentAt <= this.#leaseRenewed) return;
    this.#leaseRenewed = sentAt;
    // Written at most once a second: a file a moment old only makes a restarted agent's lease
    // a moment shorter.
    if (sentAt - this.#leasePersisted < LEASE_PERSIST_MS) return;
    this.#leasePersisted = sentAt;
    const wall = (this.#options.now ?? Date.now)() - (this.#monotonic() - sentAt);
    Deno.writeTextFile(this.leasePath, JSON.stringify({ renewed_at_ms: wall })).catch((err) =>
      this.#options.log.warn("cannot write the lease file", { error: String(err) })
    );
  }

  /**
   * Stops every attempt when the lease ran out: the server may start their next attempts
   * elsewhere once it surely has. Jobs with `on_node_lost: "wait"` keep running (nothing
   * replaces them by itself). Returns the attempts it stopped now.
   */
  checkLease(): AttemptRef[] {
    const fenceS = this.#options.fenceAfterS ?? null;
    if (fenceS === null || this.#stopped) return [];
    const silentMs = this.#monotonic() - this.#leaseRenewed;
    if (silentMs <= fenceS * 1000) return [];
    const stopped: AttemptRef[] = [];
    for (const managed of this.#attempts.values()) {
      if (managed.fenced || managed.spec.on_node_lost === "wait") continue;
      const silentS = Math.round(silentMs / 1000);
      const reason = `stopped by its agent: no contact with the server for ${silentS} s ` +
        `(fence_after_s ${fenceS}), so the server may start the next attempt elsewhere`;
      this.#options.log.warn("lease expired: stopping the attempt", {
        ...managed.ref,
        silent_s: silentS,
      });
      managed.fence(reason);
      void this.#options.emit({
        type: "event",
        stream: "data",
        event: {
          type: "JOB_FENCED",
          severity: "warning",
          message: `Attempt ${managed.ref.attempt} of job ${managed.ref.job_id} ${reason}`,
          job_id: managed.ref.job_id,
          run_id: managed.ref.run_id,
          data: { attempt: managed.ref.attempt, silent_s: silentS, fence_after_s: fenceS },
        },
      });
      stopped.push(managed.ref);
    }
    return stopped;
  }

  /** Picks up the lease where a previous agent left it (its last renewal, by the wall clock). */
  async #restoreLease(): Promise<void> {
    let text: string;
    try {
      text = await Deno.readTextFile(this.leasePath);
    } catch {
      return; // never renewed: the lease counts from this start
    }
    const wall = Number((JSON.parse(text) as { renewed_at_ms?: unknown }).renewed_at_ms);
    if (!Number.isFinite(wall)) return;
    const ago = Math.max(0, (this.#options.now ?? Date.now)() - wall);
    this.#leaseRenewed = Math.min(this.#leaseRenewed, this.#monotonic() - ago);
  }

  /** `<data_dir>/state.json`. */
  get statePath(): string {
    return `${this.#options.dataDir}/state.json`;
  }

  /**
   * Reattaches to the attempts the state file lists (call before connecting, so that hello
   * reports them). Attempts whose processes are gone end with what the runner knows.
   */
  async restore(): Promise<number> {
    try {
      await this.#restoreLease();
    } catch (err) {
      this.#options.log.warn("cannot read the lease file", { error: String(err) });
    }
    const { attempts, problems } = await loadState(this.statePath);
    for (const problem of problems) this.#options.log.warn(problem);
    for (const persisted of attempts) {
      this.#launch(new ManagedAttempt(persisted.spec, this.#deps(persisted.spec), persisted));
    }
    if (attempts.length > 0) this.#options.log.info("reattaching", { attempts: attempts.length });
    await this.#writer.save();
    return attempts.length;
  }

  /** Starts the folder-polling loop and the lease check; idempotent. */
  start(): void {
    if (this.#timer !== null || this.#stopped) return;
    // Both on the clock grid the attempts' output polls share (see `onGrid`): the agent
    // wakes once for all of them rather than once for each.
    const check = () => {
      this.checkLease();
      if (!this.#stopped) this.#leaseTimer = onGrid(FENCE_CHECK_MS, check);
    };
    this.#leaseTimer = onGrid(FENCE_CHECK_MS, check);
    const pollMs = this.#options.watchPollMs ?? WATCH_POLL_MS;
    const tick = () => {
      this.#polling = this.#pollAll().finally(() => {
        if (!this.#stopped) this.#timer = onGrid(pollMs, tick);
      });
    };
    this.#timer = onGrid(pollMs, tick);
  }

  /** Starts an attempt the server dispatched (a repeated dispatch of a running one is ignored). */
  dispatch(spec: DispatchSpec): void {
    const log = this.#options.log;
    if (this.#stopped) {
      log.warn("ignoring a dispatch: the agent is stopping", { job_id: spec.job_id });
      return;
    }
    if (this.#attempts.has(key(spec.job_id, spec.attempt))) {
      log.info("ignoring a repeated dispatch", { job_id: spec.job_id, attempt: spec.attempt });
      return;
    }
    log.info("starting", { job_id: spec.job_id, attempt: spec.attempt, run_id: spec.run_id });
    this.#launch(new ManagedAttempt(spec, this.#deps(spec)));
  }

  /** Cancels an attempt; unknown attempts are already gone from here. */
  cancel(jobId: string, attempt: number, graceS: number, reason: string): void {
    const managed = this.#attempts.get(key(jobId, attempt));
    if (!managed) {
      this.#options.log.info("cancel of an attempt not running here", { job_id: jobId, attempt });
      return;
    }
    this.#options.log.info("cancelling", { job_id: jobId, attempt, grace_s: graceS, reason });
    managed.cancel(graceS);
  }

  /** The attempts, as hello and heartbeats report them. */
  running(): OwnedProcess[] {
    return [...this.#attempts.values()].map((a) => a.owned());
  }

  /** The attempt of a run this agent runs, or null. */
  findRun(runId: string): AttemptRef | null {
    for (const a of this.#attempts.values()) if (a.ref.run_id === runId) return a.ref;
    return null;
  }

  /** The attempts, as telemetry needs them. */
  telemetryJobs(): TelemetryJob[] {
    return [...this.#attempts.values()].map((a) => ({
      ref: a.ref,
      gpu_indices: a.spec.gpu_indices,
      working_dir: a.spec.working_dir,
      pids: () => a.pids(),
      nextSysStep: () => {
        const step = a.nextSysStep();
        this.#writer.save();
        return step;
      },
    }));
  }

  /** Resolves when every attempt now known has sent its last frame (for tests). */
  async idle(): Promise<void> {
    await Promise.all(this.#runs.values());
  }

  /**
   * Stops following the attempts (their processes keep running, for the next agent), sends
   * their pending output to the spool and writes the state file; idempotent.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#leaseTimer?.();
    this.#leaseTimer = null;
    this.#timer?.();
    this.#timer = null;
    await this.#polling;
    await Promise.all([...this.#attempts.values()].map((a) => a.detach()));
    await Promise.all(this.#runs.values());
    if (this.#saveTimer !== null) clearTimeout(this.#saveTimer);
    this.#saveTimer = null;
    await this.#writer.save();
  }

  /**
   * Progress (output lines, watcher offsets) is saved at most every PROGRESS_SAVE_MS: a state
   * a moment old only makes a restarted agent send some lines and points again, which the
   * server stores once.
   */
  #saveSoon(): void {
    if (this.#saveTimer !== null) return;
    this.#saveTimer = setTimeout(() => {
      this.#saveTimer = null;
      void this.#writer.save();
    }, PROGRESS_SAVE_MS);
  }

  /**
   * True when `pid` is a live process of an attempt other than `runId`'s: one of its known
   * processes, or a descendant of one (walked up through /proc, as a process that just
   * started may not be in the attempt's last scan yet).
   */
  #otherAttemptPid(runId: string, pid: number): boolean {
    const others = new Set<number>();
    for (const managed of this.#attempts.values()) {
      if (managed.spec.run_id === runId) continue;
      const root = managed.owned().pid;
      if (root !== null) others.add(root);
      for (const p of managed.pids()) others.add(p);
    }
    if (others.size === 0) return false;
    let at: number | null = pid;
    for (let hops = 0; at !== null && at > 1 && hops < MAX_ANCESTRY; hops++) {
      if (others.has(at)) return true;
      at = readStat(at)?.ppid ?? null;
    }
    return false;
  }

  #deps(spec: DispatchSpec): AttemptDeps {
    const o = this.#options;
    return {
      runner: o.runners[spec.runner],
      emit: o.emit,
      persist: () => void this.#writer.save(),
      persistSoon: () => this.#saveSoon(),
      jobEnv: o.jobEnv,
      files: o.files,
      runsDir: `${o.dataDir}/runs`,
      log: o.log,
      now: o.now ?? Date.now,
      logFlushMs: o.logFlushMs,
      otherAttemptPid: (pid) => this.#otherAttemptPid(spec.run_id, pid),
      snapshotCode: o.snapshotCode,
    };
  }

  #launch(managed: ManagedAttempt): void {
    const k = key(managed.ref.job_id, managed.ref.attempt);
    this.#attempts.set(k, managed);
    const run = managed.run()
      .catch((err) => {
        this.#options.log.error("attempt failed in the agent", {
          ...managed.ref,
          error: String(err),
        });
        return true;
      })
      .then(async (ended) => {
        // Detached attempts stay in the state file for the next agent.
        if (!ended) return;
        this.#attempts.delete(k);
        this.#runs.delete(k);
        await this.#writer.save();
      });
    this.#runs.set(k, run);
  }

  async #pollAll(): Promise<void> {
    for (const managed of [...this.#attempts.values()]) {
      if (this.#stopped) return;
      await managed.pollWatchers();
    }
  }
}
