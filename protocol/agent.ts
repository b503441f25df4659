/**
 * The agent ⇄ server wire: JSON frames over one WebSocket at `/api/agent/ws`, validated on
 * both ends by these schemas (a discriminated union on `type`).
 *
 * Data frames carry a `stream` and a `seq` that rises by one per frame within the stream.
 * The agent appends each data frame to its spool before sending it and replays everything
 * above the server's last `ack` after a reconnect. The server applies a frame only when its
 * seq is above the stored cursor of `(node, stream)`, in the same transaction as the data,
 * then acks; so replays neither lose nor duplicate anything.
 */
import { z } from "zod";
import { freeJson, MAX_NAME_LENGTH } from "./rest/fields.ts";
import { checkpointIn, logLineIn, metricPoint, sdkLogBatch } from "./rest/sdk.ts";
import { FAILURE_CLASSES, SEVERITIES } from "./vocabulary.ts";
import { JOB_RUNNERS, NODE_LOST_POLICIES } from "./vocabulary.ts";

/** Streams of data frames. `sys` holds system metrics, the first thing dropped when the spool is full. */
export const STREAMS = ["data", "sys"] as const;
export type StreamName = typeof STREAMS[number];

const name = z.string().min(1).max(MAX_NAME_LENGTH);
const seq = z.number().int().min(1);
const jobRef = {
  job_id: name,
  attempt: z.number().int().min(1),
  run_id: name,
};

export const gpuInfo = z.object({
  index: z.number().int().min(0),
  uuid: z.string().max(200),
  name: z.string().max(200),
  memory_total_mb: z.number().min(0),
  fake: z.boolean().optional(),
  error: z.string().max(200).optional(),
});
export type GpuInfoFrame = z.infer<typeof gpuInfo>;

export const gpuSample = z.object({
  index: z.number().int().min(0),
  uuid: z.string().max(200),
  memory_used_mb: z.number().nullable(),
  memory_total_mb: z.number().nullable(),
  util_pct: z.number().nullable(),
  temp_c: z.number().nullable(),
  power_w: z.number().nullable(),
  processes: z.array(z.object({ pid: z.number().int(), used_mb: z.number().nullable() })).max(1000),
  error: z.string().max(200).optional(),
});
export type GpuSampleFrame = z.infer<typeof gpuSample>;

/** A process the agent runs for a job, as reported in hello and heartbeats. */
export const ownedProcess = z.object({
  ...jobRef,
  pid: z.number().int().nullable(),
  state: z.enum(["STARTING", "RUNNING", "STOPPING"]),
});
export type OwnedProcess = z.infer<typeof ownedProcess>;

/** First frame after connecting: the host, its GPUs, and the jobs the agent still runs. */
export const helloFrame = z.strictObject({
  type: z.literal("hello"),
  node_id: name,
  hostname: name,
  agent_version: z.string().max(50),
  gpus: z.array(gpuInfo).max(64),
  fake_gpus: z.boolean(),
  cpu_count: z.number().int().min(0),
  memory_mb: z.number().min(0),
  disk_free_mb: z.number().nullable(),
  labels: z.record(z.string().max(100), z.string().max(200)),
  cpu_slots: z.number().int().min(0).max(256),
  avoid_foreign_gpus: z.boolean(),
  running: z.array(ownedProcess).max(1000),
  /**
   * The agent's lease: out of contact with the server longer than this, it stops its jobs
   * itself, and the server starts a lost job's next attempt only after it surely did. Null or
   * absent: no lease, so the server never requeues this node's lost jobs by itself.
   */
  fence_after_s: z.number().positive().max(86_400).nullable().optional(),
});
export type HelloFrame = z.infer<typeof helloFrame>;

/** Every 10 s: liveness plus a telemetry snapshot (not spooled: the next one supersedes it). */
export const heartbeatFrame = z.strictObject({
  type: z.literal("heartbeat"),
  ts: z.number(),
  gpus: z.array(gpuSample).max(64),
  cpu_pct: z.number().nullable(),
  mem_used_mb: z.number().nullable(),
  disk_free_mb: z.number().nullable(),
  foreign: z.array(z.object({
    gpu_index: z.number().int(),
    pid: z.number().int(),
    used_mb: z.number().nullable(),
  })).max(1000),
  running: z.array(ownedProcess).max(1000),
  /**
   * Data frames the agent has spooled and the server not yet acknowledged, and the age of the
   * oldest: how far behind storing this node's data the server is (absent from older agents).
   */
  backlog: z.strictObject({
    frames: z.number().int().min(0),
    oldest_s: z.number().min(0),
  }).optional(),
});
export type HeartbeatFrame = z.infer<typeof heartbeatFrame>;

const dataBase = { stream: z.enum(STREAMS), seq };

/** A job's process changed state. */
export const jobStateFrame = z.strictObject({
  type: z.literal("job_state"),
  ...dataBase,
  ...jobRef,
  /**
   * PENDING: handed to an outside scheduler (Slurm) that has not started it yet; the job
   * stays DISPATCHED and `reason` says why it waits.
   */
  state: z.enum(["PENDING", "RUNNING", "EXITED", "DISPATCH_FAILED", "CANCELLED", "GONE"]),
  ts: z.number(),
  pid: z.number().int().nullable().optional(),
  /** The Slurm job id of the attempt (Slurm runner only). */
  slurm_job_id: z.string().regex(/^[0-9][0-9_.+]*$/).max(64).optional(),
  /** RUNNING under Slurm: the host Slurm chose. */
  node_name: name.optional(),
  /** RUNNING under Slurm: the GPU indices Slurm bound on that host. */
  gpu_indices: z.array(z.number().int().min(0)).max(64).optional(),
  exit_code: z.number().int().nullable().optional(),
  signal: z.string().max(20).nullable().optional(),
  failure_class: z.enum(FAILURE_CLASSES).nullable().optional(),
  reason: z.string().max(2000).nullable().optional(),
  /** The last lines of output, for failure classification on the server. */
  log_tail: z.array(z.string().max(4096)).max(200).optional(),
});
export type JobStateFrame = z.infer<typeof jobStateFrame>;

export const metricsFrame = z.strictObject({
  type: z.literal("metrics"),
  ...dataBase,
  ...jobRef,
  points: z.array(metricPoint).min(1).max(50_000),
});
export type MetricsFrame = z.infer<typeof metricsFrame>;

export const logsFrame = z.strictObject({
  type: z.literal("logs"),
  ...dataBase,
  ...jobRef,
  lines: z.array(logLineIn.extend({ seq: z.number().int().min(1) })).min(1).max(10_000),
});
export type LogsFrame = z.infer<typeof logsFrame>;

export const checkpointFrame = z.strictObject({
  type: z.literal("checkpoint"),
  ...dataBase,
  ...jobRef,
  checkpoint: checkpointIn,
});
export type CheckpointFrame = z.infer<typeof checkpointFrame>;

/** A batch the training script sent to the agent's local ingest endpoint, forwarded as is. */
export const sdkFrame = z.strictObject({
  type: z.literal("sdk"),
  ...dataBase,
  ...jobRef,
  batch: sdkLogBatch,
});
export type SdkFrame = z.infer<typeof sdkFrame>;

/** Something the agent noticed (FOREIGN_GPU_PROCESS, DISK_LOW, OOM …). */
export const eventFrame = z.strictObject({
  type: z.literal("event"),
  ...dataBase,
  event: z.strictObject({
    type: z.string().regex(/^[A-Z][A-Z_]{1,63}$/),
    severity: z.enum(SEVERITIES),
    message: z.string().min(1).max(4000),
    data: z.record(z.string().max(200), freeJson).optional(),
    job_id: name.optional(),
    run_id: name.optional(),
  }),
});
export type EventFrame = z.infer<typeof eventFrame>;

/** Everything an agent may send. */
export const agentFrame = z.discriminatedUnion("type", [
  helloFrame,
  heartbeatFrame,
  jobStateFrame,
  metricsFrame,
  logsFrame,
  checkpointFrame,
  sdkFrame,
  eventFrame,
]);
export type AgentFrame = z.infer<typeof agentFrame>;
export type DataFrame = Exclude<AgentFrame, HelloFrame | HeartbeatFrame>;

/** What an agent needs to start one attempt of a job. */
export const dispatchSpec = z.object({
  job_id: name,
  attempt: z.number().int().min(1),
  run_id: name,
  name,
  kind: z.enum(["TRAIN", "EVALUATE"]),
  project: name,
  experiment: name.nullable(),
  command: z.union([z.array(z.string()), z.string()]),
  shell: z.boolean(),
  working_dir: z.string(),
  env: z.record(z.string(), z.string()),
  gpu_indices: z.array(z.number().int().min(0)),
  runner: z.enum(JOB_RUNNERS),
  image: z.string().nullable(),
  tensorboard_dir: z.string().nullable(),
  checkpoint_dir: z.string().nullable(),
  grace_s: z.number().min(0),
  max_steps: z.number().int().nullable(),
  /** "wait": the agent's fence leaves this job running (the server never requeues it by itself). */
  on_node_lost: z.enum(NODE_LOST_POLICIES).optional(),
  /** The checkpoint the job starts from: its path is the job's GPUCTL_RESUME_FROM. */
  resume_from: z.object({ checkpoint_id: name, path: z.string() }).optional(),
});
export type DispatchSpec = z.infer<typeof dispatchSpec>;

/** Server → agent. */
export const serverFrame = z.discriminatedUnion("type", [
  /** The server stored everything of `stream` up to `seq`: the agent may trim its spool. */
  z.strictObject({ type: z.literal("ack"), stream: z.enum(STREAMS), seq: z.number().int().min(0) }),
  z.strictObject({ type: z.literal("dispatch"), job: dispatchSpec }),
  /** Stop an attempt: SIGTERM to its group, SIGKILL after `grace_s` (0 = at once). */
  z.strictObject({
    type: z.literal("cancel"),
    job_id: name,
    attempt: z.number().int().min(1),
    grace_s: z.number().min(0),
    reason: z.string().max(2000),
  }),
  /**
   * The reply to each hello and heartbeat: the server heard the agent. The agent renews its
   * lease from the time it sent the frame this answers (replies come in order).
   */
  z.strictObject({ type: z.literal("lease") }),
  /** The server refused a frame; the agent logs it (the connection stays up). */
  z.strictObject({ type: z.literal("error"), message: z.string().max(4000) }),
]);
export type ServerFrame = z.infer<typeof serverFrame>;
