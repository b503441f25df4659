/**
 * One attempt of a job on this agent, from dispatch (or reattach) to its last frame: starts
 * it with the runner, batches its output into `logs` frames, follows its TensorBoard and
 * checkpoint folders, and reports its start and end as `job_state` frames.
 */
import type { DispatchSpec, OwnedProcess } from "../protocol/agent.ts";
import { MAX_NAME_LENGTH } from "../protocol/rest/fields.ts";
import { type AttemptRef, clip, metricsFrames, type NewDataFrame } from "./frames.ts";
import { encodeMetricValue } from "../protocol/metric_value.ts";
import { endFrame, lostExit, pendingFrame, runningFrame } from "./job_state.ts";
import { evalFrame, prepareEvalOutput, readEvalOutput } from "./eval_output.ts";
import { createJobFiles, type JobFiles } from "./job_files.ts";
import { LogBatcher } from "./log_batcher.ts";
import { markSdkJournalTaken, readSdkJournal } from "./sdk_journal.ts";
import type { Logger } from "./log.ts";
import { RunWatchers, type WatcherStates, type WatchResult } from "./run_watchers.ts";
import { checkpointWire } from "./checkpoints/mod.ts";
import type {
  ExitInfo,
  OutputLine,
  Placement,
  QueuedInfo,
  RunHandle,
  Runner,
  RunSpec,
} from "./runner/types.ts";
import type { PersistedAttempt } from "./state_file.ts";
import type { Provenance } from "../protocol/provenance.ts";

/** File steps when the agent is given none: jobs run as the agent's user. */
const AGENT_FILES = createJobFiles(null);

/** First wait before spooling an attempt's last frames again after the spool refused them. */
export const OUTBOX_RETRY_MS = 1000;
const OUTBOX_MAX_RETRY_MS = 30_000;

/** What an attempt needs from the agent. */
export interface AttemptDeps {
  runner: Runner | null;
  /** Spools a frame (resolves once written). */
  emit(frame: NewDataFrame): Promise<unknown>;
  /** Saves the state file now (lifecycle changes). */
  persist(): void;
  /** Saves the state file within a second (progress that may be redone after a crash). */
  persistSoon?(): void;
  /** The environment additions of the job's process. */
  jobEnv(spec: DispatchSpec): Record<string, string>;
  /**
   * File steps in the job's folders (its run's folder, its results file, its SDK's journal),
   * done with the job's rights. @default the agent's own (no job_user)
   */
  files?: JobFiles;
  /** `<data_dir>/runs`. */
  runsDir: string;
  log: Logger;
  /** Unix ms. */
  now(): number;
  /** Milliseconds between log flushes. */
  logFlushMs?: number;
  /** True when `pid` is a live process of another attempt of this agent. @default never */
  otherAttemptPid?(pid: number): boolean;
  /** The code in the job's working dir (agent/provenance.ts); absent: none is taken. */
  snapshotCode?(spec: DispatchSpec): Promise<Provenance>;
}

/** An attempt this agent runs. */
export class ManagedAttempt {
  readonly spec: DispatchSpec;
  readonly ref: AttemptRef;
  #deps: AttemptDeps;
  #record: Omit<PersistedAttempt, "spec" | "tensorboard" | "checkpoints">;
  #saved: WatcherStates | null;
  /** Watcher progress whose frames are spooled: what the state file may claim. */
  #watcherStates: WatcherStates;
  #handle: RunHandle | null = null;
  #watchers: RunWatchers | null = null;
  #watching: Promise<unknown> = Promise.resolve();
  #batcher: LogBatcher;
  #cancel: number | null = null;
  /** Why the agent's fence stopped the attempt (its lease on the server ran out), or null. */
  #fenced: string | null = null;
  #detached = false;
  /** The last watcher poll began: later polls of the loop would only open files again. */
  #watchEnded = false;
  #pidsFailed = false;
  #detach!: () => void;
  #detachedSignal: Promise<null>;
  /** Frames the spool refused (a full disk), in order; they go out before anything newer. */
  #outbox: NewDataFrame[] = [];
  #spooling: Promise<boolean> = Promise.resolve(true);
  /** Reports the start of an attempt a cluster scheduler starts later (Slurm); see #whenStarted. */
  #startReport: Promise<void> = Promise.resolve();

  /** `persisted` when reattaching after an agent restart. */
  constructor(spec: DispatchSpec, deps: AttemptDeps, persisted: PersistedAttempt | null = null) {
    this.spec = spec;
    this.ref = { job_id: spec.job_id, attempt: spec.attempt, run_id: spec.run_id };
    this.#deps = deps;
    this.#record = persisted
      ? {
        handle: persisted.handle,
        state: persisted.state,
        running_sent: persisted.running_sent,
        last_line_seq: persisted.last_line_seq,
        sys_step: persisted.sys_step,
        cancel_grace_s: persisted.cancel_grace_s,
      }
      : {
        handle: null,
        state: "STARTING",
        running_sent: false,
        last_line_seq: 0,
        sys_step: 0,
        cancel_grace_s: null,
      };
    // A cancel the previous agent had begun is carried out again once reattached.
    this.#cancel = this.#record.cancel_grace_s;
    this.#saved = persisted
      ? { tensorboard: persisted.tensorboard, checkpoints: persisted.checkpoints }
      : null;
    this.#watcherStates = this.#saved ?? { tensorboard: null, checkpoints: null };
    this.#batcher = new LogBatcher({
      send: (lines) => this.#sendLines(lines),
      flushMs: deps.logFlushMs,
    });
    this.#detachedSignal = new Promise((resolve) => this.#detach = () => resolve(null));
  }

  /** What the state file keeps. */
  persisted(): PersistedAttempt {
    // Asked anew each time: a runner may learn more after start (a container's main pid).
    const handle = this.#handle?.state() ?? this.#record.handle;
    return { spec: this.spec, ...this.#record, handle, ...this.#watcherStates };
  }

  /** As hello and heartbeats report it. */
  owned(): OwnedProcess {
    return { ...this.ref, pid: this.#handle?.pid ?? null, state: this.#record.state };
  }

  /** Every live pid of the attempt (none when the runner cannot tell: telemetry is best effort). */
  pids(): number[] {
    try {
      return this.#handle?.pids() ?? [];
    } catch (err) {
      if (!this.#pidsFailed) {
        this.#pidsFailed = true;
        this.#deps.log.warn("cannot list the attempt's processes", {
          ...this.ref,
          error: String(err),
        });
      }
      return [];
    }
  }

  /** The step of the next system-metrics sample. */
  nextSysStep(): number {
    return this.#record.sys_step++;
  }

  /**
   * Starts (or reattaches to) the attempt and follows it to its end; resolves true after its
   * last frame was spooled, or false when the agent detached from it.
   */
  async run(): Promise<boolean> {
    const exit = await this.#startOrReattach();
    if (exit === null) return false; // detached: the next agent carries on
    return await this.#finish(exit);
  }

  /** Stops the attempt: SIGTERM to its processes, SIGKILL after `graceS`. */
  cancel(graceS: number): void {
    this.#record.state = "STOPPING";
    this.#record.cancel_grace_s = graceS;
    this.#deps.persist();
    if (this.#handle) {
      this.#handle.cancel(graceS).catch((err) =>
        this.#deps.log.error("cannot cancel", { ...this.ref, error: String(err) })
      );
    } else {
      this.#cancel = graceS; // applied once the runner returns the handle
    }
  }

  /** True once the fence stopped the attempt. */
  get fenced(): boolean {
    return this.#fenced !== null;
  }

  /**
   * Stops the attempt because the agent's lease ran out: as a cancel, but it ends as a lost
   * node (NODE_LOST, requeued by the server) rather than a cancel a person asked for.
   */
  fence(reason: string): void {
    this.#fenced = reason;
    this.cancel(this.spec.grace_s);
  }

  /** Polls the TensorBoard and checkpoint folders once and spools what is new. */
  pollWatchers(): Promise<void> {
    return this.#watch(false);
  }

  /**
   * Leaves the attempt's processes running for the next agent: stops following it, sends
   * the pending output lines to the spool. `run()` then resolves.
   */
  async detach(): Promise<void> {
    this.#detached = true;
    this.#handle?.detach();
    this.#detach();
    await this.#batcher.flush();
    await this.#watching;
    await this.#watchers?.close();
  }

  /**
   * Spools the snapshot of the working dir's code before the process starts, so nothing the
   * job writes is part of it. Best effort: a snapshot that fails says so in its problems.
   */
  async #sendCode(): Promise<void> {
    if (!this.#deps.snapshotCode) return;
    try {
      const provenance = await this.#deps.snapshotCode(this.spec);
      await this.#emitInOrder({ type: "sdk", stream: "data", ...this.ref, batch: { provenance } });
    } catch (err) {
      this.#deps.log.warn("cannot take the code snapshot", { ...this.ref, error: String(err) });
    }
  }

  async #startOrReattach(): Promise<ExitInfo | null> {
    const { log } = this.#deps;
    const runner = this.#deps.runner;
    const reattaching = this.#saved !== null;
    try {
      // The agent's own runs folder may lie in a working dir: its files are no job's logs.
      this.#watchers = await RunWatchers.create(this.spec, this.#saved, {
        ignore: [this.#deps.runsDir],
        otherAttemptPid: this.#deps.otherAttemptPid,
      });
      this.#watcherStates = this.#watchers.state();
    } catch (err) {
      log.warn("cannot watch the TensorBoard and checkpoint folders", {
        ...this.ref,
        error: String(err),
      });
    }
    if (runner === null) {
      const reason = `the ${this.spec.runner} runner is not available on this agent`;
      return { ...lostExit(reason), failure_class: "DISPATCH_FAILED" };
    }
    const hooks = {
      onLine: (line: OutputLine) => this.#onLine(line),
      onQueued: (info: QueuedInfo) => this.#onQueued(info),
    };
    let handle: RunHandle;
    try {
      if (reattaching) {
        if (this.#record.handle === null) {
          // The last agent stopped while starting it: a runner that hands jobs on (Slurm) may
          // have done so already, and must find that job rather than let a second one start.
          const found = await runner.recover?.(this.#runSpec(), hooks) ?? null;
          if (found === null) {
            return lostExit("the agent restarted while it was starting the attempt");
          }
          handle = found;
        } else {
          handle = await runner.reattach(this.#record.handle, hooks, this.#record.last_line_seq);
        }
      } else {
        this.#deps.persist();
        await this.#prepareFolders();
        await this.#sendCode();
        handle = await runner.start(this.#runSpec(), hooks);
      }
    } catch (err) {
      const reason = `Cannot ${reattaching ? "reattach to" : "start"} run "${this.spec.run_id}": ${
        (err as Error).message
      }`;
      return reattaching
        ? lostExit(reason)
        : { ...lostExit(reason), failure_class: "DISPATCH_FAILED" };
    }
    this.#handle = handle;
    this.#record.handle = handle.state();
    if (this.#detached) {
      handle.detach();
      return null;
    }
    // A handle whose exit is already settled never ran (DISPATCH_FAILED): no RUNNING then.
    const settled = await Promise.race([handle.exited, Promise.resolve(null)]);
    if (settled === null && handle.started && !this.#record.running_sent) {
      this.#startReport = this.#whenStarted(handle, handle.started);
    } else if (settled === null) {
      if (this.#record.state === "STARTING") this.#record.state = "RUNNING";
      if (!this.#record.running_sent) {
        this.#record.running_sent = await this.#emitInOrder(
          runningFrame(this.ref, handle.pid, this.#deps.now()),
        );
      }
    }
    this.#deps.persist();
    if (this.#cancel !== null) this.cancel(this.#cancel);
    return await Promise.race([handle.exited, this.#detachedSignal]);
  }

  /**
   * RUNNING once the cluster scheduler started the attempt, with where; nothing when it ended
   * (or the agent detached) without starting.
   */
  async #whenStarted(handle: RunHandle, started: Promise<Placement>): Promise<void> {
    const placement = await Promise.race([
      started,
      handle.exited.then(() => null),
      this.#detachedSignal,
    ]);
    if (placement === null || this.#record.running_sent) return;
    if (this.#record.state === "STARTING") this.#record.state = "RUNNING";
    this.#record.running_sent = await this.#emitInOrder(
      runningFrame(this.ref, handle.pid, this.#deps.now(), placement),
    );
    this.#deps.persist();
  }

  /** The attempt waits in the cluster scheduler's queue: the server shows why. */
  #onQueued(info: QueuedInfo): void {
    if (this.#detached || this.#record.running_sent) return;
    void this.#emitInOrder(pendingFrame(this.ref, info, this.#deps.now()));
  }

  /** Spools the attempt's last frames; false when the agent detached before they all were. */
  async #finish(ended: ExitInfo): Promise<boolean> {
    const exit: ExitInfo = this.#fenced === null
      ? ended
      : { ...ended, failure_class: "NODE_LOST", reason: this.#fenced };
    this.#record.state = "STOPPING";
    // A start seen just before the end goes out first.
    await this.#startReport;
    await this.#batcher.flush();
    this.#watchEnded = true;
    await this.#watch(true);
    await this.#watchers?.close();
    await this.#noteMissingEventFiles();
    const results = await readEvalOutput(this.spec, this.#files);
    if (results && "metrics" in results) {
      await this.#emitInOrder(evalFrame(this.ref, results));
    } else if (results) {
      this.#deps.log.warn("evaluation results file unusable", {
        ...this.ref,
        problem: results.error,
      });
    }
    await this.#takeSdkJournal();
    // The end goes out last, and the attempt is not over until everything is spooled: with a
    // full disk it waits, retrying, rather than lose frames (the agent stopping ends the wait).
    let wait = OUTBOX_RETRY_MS;
    let spooled = await this.#emitInOrder(endFrame(this.ref, exit, this.#deps.now()));
    while (!spooled) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const detached = await Promise.race([
        new Promise<boolean>((resolve) => timer = setTimeout(() => resolve(false), wait)),
        this.#detachedSignal.then(() => true),
      ]);
      clearTimeout(timer);
      // Still in the state file: the next agent finds the process gone and reports the end.
      if (detached) return false;
      wait = Math.min(wait * 2, OUTBOX_MAX_RETRY_MS);
      spooled = await this.#emitInOrder();
    }
    const level = exit.failure_class === null ? "info" : "warn";
    this.#deps.log[level]("attempt ended", {
      ...this.ref,
      exit_code: exit.exit_code,
      failure_class: exit.failure_class,
      reason: exit.reason,
    });
    return true;
  }

  /**
   * A run that got no TensorBoard scalars where some were expected says why: a warning event
   * and a line in its log (stream `system`), after the job's own last line.
   */
  async #noteMissingEventFiles(): Promise<void> {
    if (this.#detached || this.spec.kind !== "TRAIN" || !this.#watchers) return;
    let note: string | null;
    try {
      note = await this.#watchers.missingEventFilesNote();
    } catch (err) {
      this.#deps.log.warn("cannot look for the run's event files", {
        ...this.ref,
        error: String(err),
      });
      return;
    }
    if (note === null) return;
    const text = clip(`gpuctl: ${note}`, 4000);
    const seq = this.#record.last_line_seq + 1;
    const spooled = await this.#emitInOrder(
      {
        type: "event",
        stream: "data",
        event: {
          type: "TENSORBOARD_MISSING",
          severity: "warning",
          message: note,
          job_id: this.ref.job_id,
          run_id: this.ref.run_id,
        },
      },
      {
        type: "logs",
        stream: "data",
        ...this.ref,
        lines: [{ seq, ts: new Date(this.#deps.now()).toISOString(), stream: "system", text }],
      },
    );
    if (spooled) this.#record.last_line_seq = seq;
  }

  /** File steps in the job's folders. */
  get #files(): JobFiles {
    return this.#deps.files ?? AGENT_FILES;
  }

  /**
   * The run's own folder (GPUCTL_RUN_DIR) and an evaluation's results folder, made before the
   * job starts, with the job's rights: with job_user they are in the working dir, which the
   * job owns.
   */
  async #prepareFolders(): Promise<void> {
    const runDir = this.#deps.jobEnv(this.spec).GPUCTL_RUN_DIR;
    if (runDir) {
      try {
        await this.#files.makeDir(runDir);
      } catch (err) {
        this.#deps.log.warn("cannot create the run's folder", {
          ...this.ref,
          error: (err as Error).message,
        });
      }
    }
    await prepareEvalOutput(this.spec, this.#files);
  }

  /** What the job's SDK could not deliver before it exited, as sdk frames ahead of the end. */
  async #takeSdkJournal(): Promise<void> {
    const runDir = this.#deps.jobEnv(this.spec).GPUCTL_RUN_DIR;
    if (!runDir) return;
    let batches = 0;
    let from: number | undefined;
    for (;;) {
      const rest = await readSdkJournal(runDir, this.spec.run_id, this.#files, from);
      if (!rest) break;
      for (const batch of rest.batches) {
        await this.#emitInOrder({ type: "sdk", stream: "data", ...this.ref, batch });
      }
      batches += rest.batches.length;
      if (rest.batches.length > 0) await markSdkJournalTaken(rest, this.#files).catch(() => {});
      // A part with no whole line in it (a line longer than a part) ends the taking.
      if (!rest.more || rest.end === rest.start) break;
      from = rest.end;
    }
    if (batches === 0) return;
    this.#deps.log.info("took what the job's SDK had not sent", { ...this.ref, batches });
  }

  #runSpec(): RunSpec {
    const spec = this.spec;
    return {
      run_id: spec.run_id,
      job_id: spec.job_id,
      attempt: spec.attempt,
      command: spec.command,
      shell: spec.shell,
      working_dir: spec.working_dir,
      env: this.#deps.jobEnv(spec),
      gpu_indices: spec.gpu_indices,
      runner: spec.runner,
      image: spec.image,
      run_dir: `${this.#deps.runsDir}/${spec.run_id}`,
      grace_s: spec.grace_s,
    };
  }

  #onLine(line: OutputLine): void {
    if (!this.#detached) this.#batcher.add(line);
  }

  async #sendLines(lines: OutputLine[]): Promise<void> {
    const frame: NewDataFrame = {
      type: "logs",
      stream: "data",
      ...this.ref,
      lines: lines.map((l) => ({ seq: l.seq, ts: l.ts, stream: l.stream, text: l.text })),
    };
    if (await this.#emitInOrder(frame)) {
      this.#record.last_line_seq = Math.max(this.#record.last_line_seq, lines.at(-1)!.seq);
      (this.#deps.persistSoon ?? this.#deps.persist)();
    }
  }

  /** One watcher poll at a time; `final` also takes checkpoints still settling. */
  #watch(final: boolean): Promise<void> {
    const run = async () => {
      const watchers = this.#watchers;
      if ((this.#detached || this.#watchEnded) && !final) return;
      // Frames the spool refused go first. While any still wait, new scalars are left unread
      // in their files (the cursors do not move), so a long full disk costs no memory.
      if (!await this.#emitInOrder() && !final) return;
      if (!watchers) return;
      let found: WatchResult;
      try {
        found = final ? await watchers.finalPoll() : await watchers.poll();
      } catch (err) {
        this.#deps.log.warn("cannot poll the run's folders", { ...this.ref, error: String(err) });
        return;
      }
      const points = found.points
        .filter((p) =>
          p.tag.length <= MAX_NAME_LENGTH && Number.isSafeInteger(p.step) && p.step >= 0
        )
        .map((p) => ({
          key: p.tag,
          step: p.step,
          value: encodeMetricValue(p.value),
          wall_time: Math.max(0, p.wall_time),
        }));
      const waiting = this.#outbox.length;
      // The run's config from the hparams plugin, and its epoch, after the points they came with.
      const progress: NewDataFrame[] = found.config !== null || found.epoch !== null
        ? [{
          type: "sdk",
          stream: "data",
          ...this.ref,
          batch: {
            ...(found.config !== null ? { config: found.config } : {}),
            ...(found.epoch !== null ? { epoch: found.epoch } : {}),
          },
        }]
        : [];
      const spooled = await this.#emitInOrder(
        ...metricsFrames(this.ref, "data", points),
        ...progress,
        ...found.checkpoints.map((c): NewDataFrame => ({
          type: "checkpoint",
          stream: "data",
          ...this.ref,
          checkpoint: checkpointWire(c),
        })),
      );
      // The state file claims only progress whose frames are spooled: after a crash, what was
      // read but refused is read again.
      const any = points.length > 0 || found.checkpoints.length > 0 || progress.length > 0;
      if (spooled && (any || waiting > 0)) {
        this.#watcherStates = watchers.state();
        (this.#deps.persistSoon ?? this.#deps.persist)();
      }
    };
    const next = this.#watching.then(run, run);
    this.#watching = next;
    return next;
  }

  /**
   * Spools `frames` after every frame still waiting, keeping their order. True when nothing
   * is left waiting; false when the spool refused one (it and the rest wait for the next call,
   * which every watcher poll makes).
   */
  #emitInOrder(...frames: NewDataFrame[]): Promise<boolean> {
    const run = async () => {
      this.#outbox.push(...frames);
      while (this.#outbox.length > 0) {
        if (!await this.#emit(this.#outbox[0])) return false;
        this.#outbox.shift();
      }
      return true;
    };
    const next = this.#spooling.then(run, run);
    this.#spooling = next;
    return next;
  }

  /** Spools a frame; false (logged) when the spool refused it. */
  async #emit(frame: NewDataFrame): Promise<boolean> {
    try {
      await this.#deps.emit(frame);
      return true;
    } catch (err) {
      this.#deps.log.error("cannot spool a frame", {
        ...this.ref,
        type: frame.type,
        error: String(err),
      });
      return false;
    }
  }
}
