// The Slurm runner: an agent on a Slurm submit host hands each attempt to `sbatch` and
// follows it with `squeue` (one call a poll for all its jobs), `scontrol` and `sacct` (where
// accounting exists) instead of running it itself. Output, exit status and where it started
// come back through files in the run dir, which compute nodes reach over the cluster's shared
// filesystem.

import { z } from "zod";
import { alignedDelay, failedAttempt, isExitInfo } from "../_attempt.ts";
import { prepareRunDir, resolveRunnerOptions, type RunnerOptions } from "../_options.ts";
import { OutputTail } from "../output_tail.ts";
import { exists, readExitStatus, readJsonOrNull, runFile, writeJsonAtomic } from "../run_dir.ts";
import { decodeExitStatus } from "../signals.ts";
import type {
  ExitInfo,
  HandleState,
  Placement,
  RunHandle,
  RunHooks,
  Runner,
  RunSpec,
} from "../types.ts";
import { createSlurmCli, describeUid, type SlurmCli } from "./cli.ts";
import { gresGpuIndices, parseIndexList, parseKeyValueLines, type SlurmRecord } from "./parse.ts";
import { cancelledByUid, classifySlurmEnd, type EndedPhase, slurmPhase } from "./phase.ts";
import {
  batchScript,
  sbatchArgs,
  sbatchEnv,
  SLURM_FILES,
  slurmJobName,
  type SlurmSettings,
} from "./sbatch.ts";

/** How often Slurm is polled, in ms (slurmctld serves a whole cluster; one squeue call a poll). */
export const DEFAULT_SLURM_POLL_MS = 2000;
/** How long a started job may take to show where it runs (the shared filesystem's lag), in ms. */
const STARTED_FILE_WAIT_MS = 10_000;
/** Answers in a row in which neither Slurm nor the run dir knows the job before it counts as gone. */
const UNKNOWN_LIMIT = 3;
/** How often a cancel looks at the job, in ms. */
const CANCEL_POLL_MS = 200;

/** Options of {@linkcode createSlurmRunner}. */
export interface SlurmRunnerOptions extends RunnerOptions {
  settings: SlurmSettings;
  /** Slurm's commands. @default the real ones, with the agent's environment */
  cli?: SlurmCli;
  /** Milliseconds between polls of Slurm. @default DEFAULT_SLURM_POLL_MS */
  statePollMs?: number;
  /** The host's /etc/passwd, to name who cancelled a job. @default read when needed */
  passwd?: () => string | null;
}

/** The Slurm runner, and the pool size it reports. */
export interface SlurmRunner extends Runner {
  /** The partition's GPUs (from sinfo), capped by `max_gpus`; null when sinfo failed. */
  poolGpus(): Promise<number | null>;
}

const stateSchema = z.looseObject({
  run_id: z.string().min(1),
  runner: z.literal("slurm"),
  run_dir: z.string().min(1),
  slurm_job_id: z.string().regex(/^\d+$/).optional(),
  dispatch_failed: z.string().optional(),
});

/** A runner that submits each attempt with sbatch (see sbatch.ts for the exact line). */
export function createSlurmRunner(options: SlurmRunnerOptions): SlurmRunner {
  const resolved = resolveRunnerOptions(options);
  const cli = options.cli ?? createSlurmCli({ env: resolved.agentEnv });
  const settings = options.settings;
  const loop: SlurmLoop = {
    cli,
    states: new StateBatcher(cli),
    pollMs: resolved.pollMs,
    statePollMs: options.statePollMs ?? DEFAULT_SLURM_POLL_MS,
    passwd: options.passwd ?? readPasswd,
  };
  return {
    kind: "slurm",
    async poolGpus() {
      const gpus = await cli.partitionGpus(settings.partition);
      if (gpus === null) return null;
      return settings.max_gpus === null ? gpus : Math.min(gpus, settings.max_gpus);
    },
    async start(spec: RunSpec, hooks: RunHooks): Promise<RunHandle> {
      const problem = await prepareRunDir(spec) ?? checkSlurmSpec(spec);
      if (problem !== null) return failedAttempt(spec.run_id, "slurm", spec.run_dir, problem);
      for (const stale of ["exitStatus", "exit", "cancel"] as const) {
        await Deno.remove(runFile(spec.run_dir, stale)).catch(() => {});
      }
      await Deno.remove(`${spec.run_dir}/${SLURM_FILES.started}`).catch(() => {});
      const tail = await OutputTail.create({ runDir: spec.run_dir, hooks, now: resolved.now });
      const script = `${spec.run_dir}/${SLURM_FILES.script}`;
      await Deno.writeTextFile(script, batchScript(spec), { mode: 0o700 });
      const submitted = await cli.submit(
        sbatchArgs(spec, settings, script),
        sbatchEnv(spec, resolved.jobBaseEnv, resolved.agentEnv),
      );
      if ("error" in submitted) {
        return failedAttempt(spec.run_id, "slurm", spec.run_dir, submitted.error);
      }
      const attempt = new SlurmAttempt({
        runId: spec.run_id,
        runDir: spec.run_dir,
        slurmJobId: submitted.job_id,
        hooks,
        tail,
        cancelled: false,
        reattached: false,
      }, loop);
      await writeJsonAtomic(runFile(spec.run_dir, "handle"), attempt.state());
      return attempt;
    },
    /**
     * The Slurm job of a run whose id the last agent never saved: from the handle file it
     * writes next to the job's output, else by the job name (`gpuctl-<run_id>`), so a job
     * submitted just before the agent stopped is followed, not submitted again.
     */
    async recover(spec: RunSpec, hooks: RunHooks): Promise<RunHandle | null> {
      const saved = await readJsonOrNull(runFile(spec.run_dir, "handle"));
      const parsed = stateSchema.safeParse(saved);
      if (parsed.success && parsed.data.slurm_job_id !== undefined) {
        return await this.reattach(parsed.data, hooks, 0);
      }
      const ids = await cli.findByName(slurmJobName(spec.run_id));
      if (ids === null) {
        throw new Error(
          `Cannot tell whether run "${spec.run_id}" was submitted: squeue failed, so Slurm ` +
            "may be running it unseen",
        );
      }
      if (ids.length === 0) return null;
      const state: HandleState = {
        run_id: spec.run_id,
        runner: "slurm",
        run_dir: spec.run_dir,
        slurm_job_id: ids[0],
      };
      await writeJsonAtomic(runFile(spec.run_dir, "handle"), state);
      return await this.reattach(state, hooks, 0);
    },
    async reattach(state: HandleState, hooks: RunHooks, lastDeliveredSeq: number) {
      const parsed = stateSchema.safeParse(state);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new Error(
          `Cannot reattach run "${String(state?.run_id)}" to its Slurm job: state field "${
            issue.path.join(".")
          }" ${issue.message}`,
        );
      }
      const { run_id, run_dir, slurm_job_id, dispatch_failed } = parsed.data;
      if (dispatch_failed !== undefined || slurm_job_id === undefined) {
        return failedAttempt(run_id, "slurm", run_dir, dispatch_failed ?? "never submitted");
      }
      const tail = await OutputTail.resume(
        { runDir: run_dir, hooks, now: resolved.now },
        lastDeliveredSeq,
      );
      return new SlurmAttempt({
        runId: run_id,
        runDir: run_dir,
        slurmJobId: slurm_job_id,
        hooks,
        tail,
        cancelled: await exists(runFile(run_dir, "cancel")),
        reattached: true,
      }, loop);
    },
  };
}

/** Why `spec` cannot go to Slurm, or null. */
function checkSlurmSpec(spec: RunSpec): string | null {
  if (spec.runner === "docker") {
    return "this agent hands jobs to Slurm, which runs commands, not Docker images: " +
      "submit it without runner docker (or with a command that starts the container)";
  }
  const argv = typeof spec.command === "string" ? [spec.command] : spec.command;
  return argv.length === 0 || argv[0] === "" ? "the command is empty" : null;
}

function readPasswd(): string | null {
  try {
    return Deno.readTextFileSync("/etc/passwd");
  } catch {
    return null;
  }
}

/** What every Slurm attempt of one runner shares. */
interface SlurmLoop {
  cli: SlurmCli;
  states: StateBatcher;
  pollMs: number;
  statePollMs: number;
  passwd: () => string | null;
}

/** How long questions about jobs' states are gathered before one squeue call answers them all. */
const BATCH_WINDOW_MS = 20;

/**
 * Gathers the state questions of all of a runner's attempts into one `squeue` call: the
 * attempts ask in the same turn (their polls are aligned to the clock), so slurmctld answers
 * one request per poll interval however many jobs the agent follows.
 */
class StateBatcher {
  readonly #cli: SlurmCli;
  #waiting = new Map<string, ((record: SlurmRecord | null | undefined) => void)[]>();
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(cli: SlurmCli) {
    this.#cli = cli;
  }

  /** The job's record; null when slurmctld no longer holds it; undefined when squeue failed. */
  ask(jobId: string): Promise<SlurmRecord | null | undefined> {
    const { promise, resolve } = Promise.withResolvers<SlurmRecord | null | undefined>();
    const waiting = this.#waiting.get(jobId) ?? [];
    waiting.push(resolve);
    this.#waiting.set(jobId, waiting);
    this.#timer ??= setTimeout(() => void this.#flush(), BATCH_WINDOW_MS);
    return promise;
  }

  async #flush(): Promise<void> {
    this.#timer = null;
    const batch = this.#waiting;
    this.#waiting = new Map();
    let answer: Map<string, SlurmRecord> | null;
    try {
      answer = await this.#cli.states([...batch.keys()]);
    } catch {
      answer = null;
    }
    for (const [id, waiting] of batch) {
      for (const resolve of waiting) resolve(answer === null ? undefined : answer.get(id) ?? null);
    }
  }
}

interface SlurmAttemptInit {
  runId: string;
  runDir: string;
  slurmJobId: string;
  hooks: RunHooks;
  tail: OutputTail;
  cancelled: boolean;
  /** Followed again after an agent restart: an end the last agent computed stands. */
  reattached: boolean;
}

/** One attempt handed to Slurm: follows its queue state, output and end; cancels it. */
class SlurmAttempt implements RunHandle {
  readonly run_id: string;
  readonly pid = null;
  readonly exited: Promise<ExitInfo>;
  readonly started: Promise<Placement>;
  readonly #init: SlurmAttemptInit;
  readonly #loop: SlurmLoop;
  #resolveExit: (info: ExitInfo) => void = () => {};
  #resolveStarted: (placement: Placement) => void = () => {};
  #startedSent = false;
  #runningSince: number | null = null;
  #lastReason: string | null = null;
  /** The poll interval slot of the last question to Slurm (see #tick). */
  #lastSlot = -1;
  #unknown = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;
  #cancelled: boolean;
  #cancelling: Promise<void> | null = null;
  #lastNode: string | null = null;
  #lastRecord: SlurmRecord | null = null;

  constructor(init: SlurmAttemptInit, loop: SlurmLoop) {
    this.#init = init;
    this.#loop = loop;
    this.run_id = init.runId;
    this.#cancelled = init.cancelled;
    this.exited = new Promise((resolve) => this.#resolveExit = resolve);
    this.started = new Promise((resolve) => this.#resolveStarted = resolve);
    this.#schedule(0);
  }

  state(): HandleState {
    return {
      run_id: this.run_id,
      runner: "slurm",
      run_dir: this.#init.runDir,
      slurm_job_id: this.#init.slurmJobId,
    };
  }

  /** No process of a Slurm job runs on the submit host. */
  pids(): number[] {
    return [];
  }

  detach(): void {
    this.#stopped = true;
    this.#init.tail.mute();
    clearTimeout(this.#timer);
  }

  cancel(grace_s: number): Promise<void> {
    this.#cancelling ??= this.#cancel(grace_s);
    return this.#cancelling;
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    // Aligned to the clock, so every attempt's question lands in the same squeue call.
    this.#timer = setTimeout(() => this.#tick(), alignedDelay(ms));
  }

  async #tick(): Promise<void> {
    this.#timer = undefined;
    if (this.#stopped) return;
    try {
      await this.#init.tail.poll(false);
      const every = this.#cancelling ? CANCEL_POLL_MS : this.#loop.statePollMs;
      const slot = Math.floor(Date.now() / every);
      if (slot !== this.#lastSlot) {
        this.#lastSlot = slot;
        const ended = await this.#observe();
        if (ended) return await this.#finish(ended);
      }
    } catch {
      // A failed read or a Slurm command that could not run is tried again on the next tick.
    }
    this.#schedule(Math.max(this.#loop.pollMs, 100));
  }

  /** Asks Slurm where the job is and reports it; the end when it has ended. */
  async #observe(): Promise<EndedPhase | null> {
    const { cli } = this.#loop;
    const id = this.#init.slurmJobId;
    const listed = await this.#loop.states.ask(id);
    if (listed === undefined) return null; // squeue could not answer: ask again next time
    let record = listed;
    let phase = record ? slurmPhase(record) : null;
    if (phase === null || phase.phase === "ended") {
      // How it ended (exit code, time limit) is in scontrol's record; Slurm forgets a finished
      // job after MinJobAge, and then accounting, or the script's own record, tells.
      record = await cli.show(id) ?? await cli.accounting(id);
      phase = record ? slurmPhase(record) : null;
    }
    if (phase === null) {
      const status = await readExitStatus(this.#init.runDir);
      if (status === null && ++this.#unknown < UNKNOWN_LIMIT) return null;
      const end = status === null ? { exit_code: null, signal: null } : decodeExitStatus(status);
      return { phase: "ended", state: "", reason: "", ...end };
    }
    this.#unknown = 0;
    this.#lastRecord = record;
    if (phase.phase === "pending") {
      if (phase.reason !== this.#lastReason && !this.#startedSent) {
        this.#lastReason = phase.reason;
        this.#init.hooks.onQueued?.({ slurm_job_id: id, reason: phase.reason });
      }
      return null;
    }
    if (phase.phase === "running") {
      this.#lastNode = phase.node;
      await this.#reportStarted(record!, false);
      return null;
    }
    // It ran if it left the file its script writes first.
    if (await exists(`${this.#init.runDir}/${SLURM_FILES.started}`)) {
      await this.#reportStarted(record!, true);
    }
    return phase;
  }

  /** Resolves `started` once the job shows its host and GPUs (or after a bounded wait). */
  async #reportStarted(record: SlurmRecord, final: boolean): Promise<void> {
    if (this.#startedSent) return;
    this.#runningSince ??= Date.now();
    let file: Record<string, string> | null = null;
    try {
      file = parseKeyValueLines(
        await Deno.readTextFile(`${this.#init.runDir}/${SLURM_FILES.started}`),
      );
    } catch {
      file = null;
    }
    const fromJob = file
      ? parseIndexList(file.slurm_job_gpus || file.cuda_visible_devices || "")
      : null;
    const waited = Date.now() - this.#runningSince >= STARTED_FILE_WAIT_MS;
    if (file === null && !waited && !final) return;
    // No word from inside the job (yet): the GPUs Slurm says it bound.
    if (fromJob === null && record.GRES === undefined) {
      record = await this.#loop.cli.show(this.#init.slurmJobId) ?? record;
    }
    const fromSlurm = gresGpuIndices(record.GRES);
    this.#startedSent = true;
    const node = file?.node || record.Nodes || record.NodeList || null;
    this.#resolveStarted({
      slurm_job_id: this.#init.slurmJobId,
      node_name: node === "(null)" ? null : node,
      gpu_indices: fromJob ?? fromSlurm,
    });
  }

  async #finish(ended: EndedPhase): Promise<void> {
    const { runDir, tail } = this.#init;
    await tail.poll(true);
    if (this.#stopped) return;
    const saved = await readJsonOrNull(runFile(runDir, "exit"));
    if (this.#init.reattached && isExitInfo(saved)) return this.#end(saved);
    // The script's own record is exact (Slurm reads a shell's 128 + N as an exit code).
    const status = await readExitStatus(runDir);
    const end = status !== null
      ? decodeExitStatus(status)
      : { exit_code: ended.exit_code, signal: ended.signal };
    const cancelled = this.#cancelled || await exists(runFile(runDir, "cancel"));
    let cancelledBy: string | null = null;
    if (ended.state === "CANCELLED" && !cancelled) {
      const accounted = await this.#loop.cli.accounting(this.#init.slurmJobId);
      const uid = cancelledByUid(accounted?.State ?? ended.reason);
      cancelledBy = uid === null ? null : describeUid(uid, this.#loop.passwd());
    }
    const log_tail = tail.recentLines();
    const record = this.#lastRecord;
    const verdict = classifySlurmEnd({
      state: ended.state === "" ? null : ended.state,
      state_text: ended.reason,
      ...end,
      cancelled,
      cancelled_by: cancelledBy,
      log_tail,
      time_limit: record?.TimeLimit ?? record?.Timelimit ?? null,
      node: this.#lastNode ?? record?.NodeList ?? null,
    });
    const info: ExitInfo = { ...end, ...verdict, log_tail };
    await writeJsonAtomic(runFile(runDir, "exit"), info).catch(() => {});
    this.#end(info);
  }

  #end(info: ExitInfo): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#resolveExit(info);
  }

  /**
   * `scancel --signal=TERM --full` (the batch script and everything it started), then
   * `scancel --signal=KILL --full` and `scancel` after the grace period; a job still
   * pending is simply removed from the queue. Resolves once Slurm has ended the job.
   */
  async #cancel(grace_s: number): Promise<void> {
    const { cli } = this.#loop;
    const id = this.#init.slurmJobId;
    this.#cancelled = true;
    await Deno.writeTextFile(runFile(this.#init.runDir, "cancel"), new Date().toISOString())
      .catch(() => {});
    const record = await cli.show(id);
    const phase = record ? slurmPhase(record) : null;
    if (phase?.phase === "ended") {
      await this.exited;
      return;
    }
    if (phase?.phase === "running") await cli.cancel(id, "TERM");
    else await cli.cancel(id, null);
    this.#lastSlot = -1;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const graceOver = new Promise<"grace">((resolve) =>
      timer = setTimeout(() => resolve("grace"), Math.max(0, grace_s) * 1000)
    );
    const first = await Promise.race([this.exited.then(() => "ended" as const), graceOver]);
    clearTimeout(timer);
    if (first === "grace" && !this.#stopped) {
      await cli.cancel(id, "KILL");
      await cli.cancel(id, null);
    }
    await this.exited;
  }
}
