import type { FailureClass, JobStatus, RunStatus, Scope, Severity } from "./rest.ts";

/** A job as the API returns it: the submission plus its scheduling state. */
export interface Job {
  id: string;
  name: string;
  kind: "TRAIN" | "EVALUATE";
  project: string;
  experiment: string | null;
  command: string[] | string;
  shell: boolean;
  working_dir: string;
  env: Record<string, string>;
  gpus: number;
  priority: number;
  max_attempts: number;
  node: string | null;
  tensorboard_dir: string | null;
  checkpoint_dir: string | null;
  runner: "process" | "docker";
  image: string | null;
  after: string[];
  max_steps: number | null;
  grace_s: number | null;
  status: JobStatus;
  attempt: number;
  failure_class: FailureClass | null;
  reason: string | null;
  exit_code: number | null;
  signal: string | null;
  node_id: string | null;
  gpu_indices: number[];
  run_id: string | null;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** The primary metric of a run: which key, which way is better, and where it stands. */
export interface PrimaryMetric {
  key: string;
  direction: "min" | "max";
  latest: number | null;
  best: number | null;
  best_step: number | null;
}

/** A run as the API returns it. */
export interface Run {
  id: string;
  job_id: string | null;
  attempt: number;
  project: string;
  experiment: string | null;
  name: string;
  source: "job" | "sdk" | "import";
  status: RunStatus;
  step: number | null;
  epoch: number | null;
  max_steps: number | null;
  config: Record<string, unknown>;
  env: Record<string, unknown>;
  node_id: string | null;
  dropped_points: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  primary_metric: PrimaryMetric | null;
}

/** One stored event. */
export interface EventRecord {
  id: number;
  ts: string;
  type: string;
  severity: Severity;
  run_id: string | null;
  job_id: string | null;
  node_id: string | null;
  message: string;
  data: Record<string, unknown>;
}

/** One log line kept on the server. */
export interface LogLine {
  seq: number;
  ts: string;
  stream: string;
  text: string;
}

/** A metric point as streamed live; `seq` orders every write across the server. */
export interface StreamedPoint {
  seq: number;
  key: string;
  step: number;
  value: number | string;
  wall_time: number;
}

/** A checkpoint file or folder registered for a run. */
export interface Checkpoint {
  id: string;
  run_id: string;
  step: number | null;
  epoch: number | null;
  path: string;
  size_bytes: number | null;
  metrics: Record<string, unknown>;
  created_at: string;
}

/** A GPU host as last reported by its agent. */
export interface NodeRecord {
  id: string;
  hostname: string;
  status: "ONLINE" | "OFFLINE";
  gpus: { index: number; uuid: string; name: string; memory_total_mb: number; fake?: boolean }[];
  cpu_count: number | null;
  memory_mb: number | null;
  disk_free_mb: number | null;
  labels: Record<string, string>;
  agent_version: string | null;
  cpu_slots: number;
  avoid_foreign_gpus: boolean;
  fake_gpus: boolean;
  telemetry: Record<string, unknown>;
  last_heartbeat_at: string | null;
  created_at: string;
}

export interface Project {
  name: string;
  description: string;
  primary_metric: string | null;
  eval_command: string | null;
  created_at: string;
  updated_at: string;
}

export interface Experiment {
  id: string;
  project: string;
  name: string;
  description: string;
  primary_metric: string | null;
  created_at: string;
  updated_at: string;
}

export interface MetricDefinition {
  scope: "global" | "project" | "experiment";
  scope_id: string;
  key: string;
  direction: "min" | "max";
  primary: boolean;
}

/** A token as listed: never the secret. */
export interface TokenInfo {
  id: string;
  name: string;
  scope: Scope;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

/** Every list endpoint answers with this. */
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** A metric value as JSON carries it: NaN and ±Infinity become strings. */
export function encodeMetricValue(v: number): number | string {
  if (Number.isFinite(v)) return v;
  if (Number.isNaN(v)) return "NaN";
  return v > 0 ? "Infinity" : "-Infinity";
}
