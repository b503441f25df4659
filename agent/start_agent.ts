/**
 * The agent as a function: {@linkcode startAgent} wires GPUs, spool, jobs, local ingest,
 * telemetry and the server connection together and returns a handle to stop it. `main.ts`
 * calls it with the resolved config; tests call it in-process against a fake server.
 */
import type { JobRunner } from "../protocol/vocabulary.ts";
import type { GpuInfoFrame, HeartbeatFrame, HelloFrame } from "../protocol/agent.ts";
import type { ResolvedAgentConfig } from "./config.ts";
import {
  ANSWER_TIMEOUT_HEARTBEATS,
  Connection,
  MIN_BACKOFF_MS,
  type ServerCommand,
} from "./connection.ts";
import { clip } from "./frames.ts";
import { createFakeGpus, type GpuProbe, openNvml } from "./gpu/mod.ts";
import { diskUsage, HostReader, toMb } from "./host_stats.ts";
import {
  ingestSocketPath,
  runKeyFrom,
  startIngestServer,
  startTcpIngestServer,
  type TcpIngestServer,
  tcpIngestUrl,
} from "./ingest_server.ts";
import { buildJobEnv, SDK_DIR } from "./job_env.ts";
import { createJobFiles } from "./job_files.ts";
import { JobManager } from "./jobs.ts";
import type { Logger } from "./log.ts";
import {
  createDockerRunner,
  createProcessRunner,
  createSlurmRunner,
  type SlurmRunner,
} from "./runner/mod.ts";
import type { Runner } from "./runner/types.ts";
import { SLURM_PARTITION_LABEL } from "../protocol/objects.ts";
import { Spool } from "./spool.ts";
import { spoolEmitter } from "./spool_emitter.ts";
import { Telemetry } from "./telemetry.ts";
import { AGENT_VERSION } from "./version.ts";
import { codeSnapshotter, DEFAULT_TOOL_PATH } from "./provenance.ts";

/** What the agent takes besides its config; everything but `log` has a default. */
export interface AgentDeps {
  log: Logger;
  /** The environment jobs' processes start from. @default the runners' default (the agent's) */
  baseEnv?: Record<string, string>;
  /** Replaces the runners (tests). @default the process and Docker runners */
  runners?: Record<JobRunner, Runner | null>;
  /** Replaces the GPU probe (tests); null for a CPU-only node. @default from the config */
  probe?: GpuProbe | null;
  /** Unix ms. @default Date.now */
  now?: () => number;
  /** Reconnect delay for a 0-based attempt. @default backoffDelay with jitter */
  backoff?: (attempt: number) => number;
  /** How often TensorBoard and checkpoint folders are polled. @default 1000 */
  watchPollMs?: number;
}

/** A running agent. */
export interface RunningAgent {
  readonly config: ResolvedAgentConfig;
  /** The local ingest endpoint's Unix socket (the same path at every start). */
  readonly ingestSocket: string;
  readonly probe: GpuProbe | null;
  readonly jobs: JobManager;
  readonly spool: Spool;
  readonly connection: Connection;
  /**
   * Stops loops, closes the socket, writes the state file; the jobs keep running (in their
   * own process groups) for the next agent to reattach. Idempotent.
   */
  stop(): Promise<void>;
}

/** Starts the agent: reattaches to the jobs it ran, then connects to the server. */
export async function startAgent(
  config: ResolvedAgentConfig,
  deps: AgentDeps,
): Promise<RunningAgent> {
  const { log } = deps;
  const now = deps.now ?? Date.now;
  await Deno.mkdir(config.dataDir, { recursive: true, mode: 0o700 });
  // A Slurm agent's GPUs are on the compute nodes: this host's are not the pool's.
  const probe = deps.probe !== undefined
    ? deps.probe
    : config.runner === "slurm"
    ? null
    : openProbe(config, log);
  const spool = await Spool.open(`${config.dataDir}/spool`, {
    maxBytes: config.spoolMaxBytes,
    log,
  });
  const host = new HostReader();

  const emit = spoolEmitter(spool, { log, now });

  // A job user cannot enter the private data dir: its socket is in a temp folder its group
  // may enter, and its run's folder in its working dir.
  const jobUser = config.jobUser;
  const ingestSocket = ingestSocketPath(config.dataDir, undefined, jobUser !== null);
  const socketFolder = ingestSocket.slice(0, ingestSocket.lastIndexOf("/"));
  const slurm = config.slurm === null ? null : createSlurmRunner({
    baseEnv: deps.baseEnv,
    settings: config.slurm,
    statePollMs: config.slurm.pollMs,
  });
  const runners = deps.runners ?? (slurm
    // Both kinds of job go to Slurm; it refuses Docker images with a reason.
    ? { process: slurm, docker: slurm }
    : {
      process: createProcessRunner({ baseEnv: deps.baseEnv, jobUser: config.jobUser }),
      docker: createDockerRunner({
        baseEnv: deps.baseEnv,
        jobUser: config.jobUser,
        // No container runtime can grant fake GPUs: their jobs get CUDA_VISIBLE_DEVICES only.
        gpus: probe?.kind !== "fake",
        runArgs: config.dockerRunArgs,
        // The socket's folder, not the socket: the next agent's socket is a new file.
        readOnlyMounts: SDK_DIR === null ? [socketFolder] : [SDK_DIR, socketFolder],
      }),
    });
  const pool = slurm && config.slurm ? await slurmPool(slurm, config.slurm.partition) : null;
  // Jobs on compute nodes reach the agent over the network, each run with its own key.
  const runKey = config.ingest ? await runKeyFrom(config.dataDir) : null;
  let tcpIngest: TcpIngestServer | null = null;
  const runsDir = `${config.dataDir}/runs`;
  const jobs = new JobManager({
    dataDir: config.dataDir,
    runners,
    emit,
    jobEnv: (spec) => {
      const env = buildJobEnv(spec, {
        serverUrl: config.serverUrl,
        ingestSocket,
        runsDir,
        runDirInWorkingDir: jobUser !== null,
        sdkDir: SDK_DIR,
        pythonPath: config.pythonPath,
      });
      if (config.ingest && runKey && tcpIngest) {
        env.GPUCTL_INGEST_URL = tcpIngestUrl(
          config.ingest.host,
          tcpIngest.port,
          runKey(spec.run_id),
          spec.run_id,
        );
      }
      return env;
    },
    // The run's folder is made when the attempt starts, as the job's user (job_files.ts).
    files: createJobFiles(jobUser),
    log,
    now,
    watchPollMs: deps.watchPollMs,
    fenceAfterS: config.fenceAfterS,
    snapshotCode: codeSnapshotter(deps.baseEnv?.PATH ?? DEFAULT_TOOL_PATH, jobUser),
  });
  // Requests wait for the restore, so a reattached job's SDK is never told its run is unknown.
  const restored = Promise.withResolvers<void>();
  const ingest = await startIngestServer(
    { findRun: (runId) => jobs.findRun(runId), emit, log, ready: restored.promise },
    ingestSocket,
    jobUser?.gid ?? null,
  );
  if (config.ingest && runKey) {
    tcpIngest = await startTcpIngestServer(
      { findRun: (runId) => jobs.findRun(runId), emit, log, ready: restored.promise },
      config.ingest.host,
      config.ingest.port,
      runKey,
    );
  }
  await jobs.restore().finally(() => restored.resolve());

  const telemetry = new Telemetry({
    probe,
    host,
    dataDir: config.dataDir,
    // A Slurm job runs on a compute node: this host's CPU and memory are not its own.
    jobs: () => config.runner === "slurm" ? [] : jobs.telemetryJobs(),
    emit,
    log,
    sampleMs: config.sampleMs,
    now,
  });

  const gpus: GpuInfoFrame[] = pool?.gpus ?? (probe?.devices() ?? []).slice(0, 64).map((gpu) => ({
    index: gpu.index,
    uuid: clip(gpu.uuid, 200),
    name: clip(gpu.name, 200),
    memory_total_mb: gpu.memory_total_mb,
    fake: gpu.fake,
    ...(gpu.error ? { error: clip(gpu.error, 200) } : {}),
  }));
  const hello = (): HelloFrame => {
    const disk = diskUsage(config.dataDir);
    return {
      type: "hello",
      node_id: config.nodeId,
      hostname: clip(config.hostname, 200),
      agent_version: AGENT_VERSION,
      gpus,
      fake_gpus: probe?.kind === "fake",
      cpu_count: host.cpuCount(),
      memory_mb: host.memory()?.totalMb ?? 0,
      disk_free_mb: disk ? toMb(disk.freeBytes) : null,
      labels: pool ? { ...config.labels, ...pool.labels } : config.labels,
      cpu_slots: config.cpuSlots,
      avoid_foreign_gpus: config.avoidForeignGpus,
      running: jobs.running(),
      fence_after_s: config.fenceAfterS,
    };
  };
  const heartbeat = (): HeartbeatFrame => ({
    type: "heartbeat",
    ts: now() / 1000,
    ...telemetry.latest(),
    running: jobs.running(),
    backlog: connection.backlog(),
  });
  const onCommand = (command: ServerCommand) => {
    if (command.type === "dispatch") jobs.dispatch(command.job);
    else jobs.cancel(command.job_id, command.attempt, command.grace_s, command.reason);
  };
  const connection = new Connection({
    url: config.wsUrl,
    token: config.token,
    spool,
    log,
    hello,
    heartbeat,
    onCommand,
    heartbeatMs: config.heartbeatMs,
    backoff: deps.backoff,
    onLease: (sentAt) => jobs.renewLease(sentAt),
    // While the server is down, each refused attempt renews the lease: try three times a lease.
    maxBackoffMs: config.fenceAfterS === null
      ? undefined
      : Math.max(MIN_BACKOFF_MS, (config.fenceAfterS * 1000) / 3),
    // A silent connection is given up well before the lease runs out, so that connecting
    // again (a backoff and a handshake) still fits in it.
    answerTimeoutMs: config.fenceAfterS === null
      ? undefined
      : Math.min(ANSWER_TIMEOUT_HEARTBEATS * config.heartbeatMs, (config.fenceAfterS * 1000) / 3),
  });

  telemetry.start();
  jobs.start();
  connection.start();
  log.info("agent started", {
    node_id: config.nodeId,
    server: config.serverUrl,
    gpus: gpus.length,
    fake_gpus: probe?.kind === "fake",
    data_dir: config.dataDir,
    ingest_socket: ingestSocket,
    job_user: config.jobUser?.name ?? null,
    ...(config.slurm
      ? {
        runner: "slurm",
        partition: config.slurm.partition,
        ingest: `${config.ingest?.host}:${tcpIngest?.port}`,
      }
      : {}),
  });

  let stopping: Promise<void> | null = null;
  const stop = () =>
    stopping ??= (async () => {
      await telemetry.stop();
      await ingest.stop();
      await tcpIngest?.stop();
      await jobs.stop();
      await connection.stop();
      await spool.close();
      probe?.close();
      log.info("agent stopped; jobs keep running", { running: jobs.running().length });
    })();

  return { config, ingestSocket, probe, jobs, spool, connection, stop };
}

/**
 * A Slurm agent's node: the partition's GPUs (from sinfo, capped by max_gpus), and the label
 * that marks it a Slurm pool. Its GPUs are on compute nodes, so this host's NVML is not asked.
 */
async function slurmPool(
  runner: SlurmRunner,
  partition: string,
): Promise<{ gpus: GpuInfoFrame[]; labels: Record<string, string> }> {
  const count = await runner.poolGpus();
  if (count === null) {
    throw new Error(
      `Cannot read Slurm partition "${partition}": sinfo failed or lists no node in it ` +
        "(check slurm.partition in agent.yaml, and that sinfo works for the agent's user)",
    );
  }
  const gpus = Array.from({ length: Math.min(count, 64) }, (_, index) => ({
    index,
    uuid: clip(`slurm-${partition}-${index}`, 200),
    name: clip(`GPU of Slurm partition ${partition}`, 200),
    memory_total_mb: 0,
  }));
  return { gpus, labels: { [SLURM_PARTITION_LABEL]: partition } };
}

/** Fake GPUs when asked for, else NVML; no NVML makes a CPU-only node (said once). */
function openProbe(config: ResolvedAgentConfig, log: Logger): GpuProbe | null {
  if (config.fakeGpus !== null) return createFakeGpus(config.fakeGpus, { uuidSeed: config.nodeId });
  const opened = openNvml({
    libraryPath: config.nvmlLibrary ?? undefined,
    log: (message) => log.warn(message),
  });
  if (opened.probe === null) {
    log.info("no usable NVML: this is a CPU-only node", { reason: opened.reason });
  }
  return opened.probe;
}
