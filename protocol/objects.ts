/**
 * What the API answers with: jobs, runs, events, checkpoints, nodes, tokens and the semantic
 * answers (diagnoses, comparisons, recommendations) that REST, MCP and the console share.
 */
import type { CodeComparison } from "./lineage.ts";
import type {
  CheckpointState,
  DefinitionScope,
  FailureClass,
  JobRunner,
  JobStatus,
  Mark,
  MetricDirection,
  NodeLostPolicy,
  RunSource,
  RunStatus,
  Scope,
  Severity,
} from "./vocabulary.ts";
import type { TokenBudget } from "./budgets.ts";

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
  /** The job's variables; secret ones (see `secret_env`) show as "••••••". */
  env: Record<string, string>;
  /** Names in `env` whose values are never shown, besides those that look secret. */
  secret_env: string[];
  gpus: number;
  priority: number;
  max_attempts: number;
  node: string | null;
  tensorboard_dir: string | null;
  checkpoint_dir: string | null;
  runner: JobRunner;
  image: string | null;
  after: string[];
  max_steps: number | null;
  grace_s: number | null;
  /** Anomaly event types that cancel the job when raised on its run. */
  stop_on: string[];
  /** The config each of its runs records (a sweep trial's parameters); `{}` for most jobs. */
  config: Record<string, unknown>;
  /** What happens when its node goes silent: requeue once the node's lease expired, or wait. */
  on_node_lost: NodeLostPolicy;
  /** The next attempt starts no earlier than this: the silent node's lease expiry. */
  not_before: string | null;
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
  /** The run this job continues or varies (its runs' parent in the tree); null: a root. */
  parent_run: string | null;
  /** The checkpoint it starts from, passed to it as GPUCTL_RESUME_FROM (the path). */
  resume_from: { checkpoint_id: string; path: string } | null;
  /** What a fork changed from its parent's job; null for a job not made by a fork. */
  fork_overrides: ForkOverrides | null;
}

/** What `fork_run` changes of the parent's job. */
export interface ForkOverrides {
  /** `--NAME VALUE` arguments set (replaced where the command has them), or removed (null). */
  args?: Record<string, string | number | boolean | null>;
  /** Variables set, or removed (null). */
  env?: Record<string, string | null>;
  /** Config values recorded on the run and passed as GPUCTL_PARAM_NAME variables. */
  config?: Record<string, unknown>;
}

/** A run's verdict in its experiment's tree: kept (a line worth following) or discarded. */
export interface RunMark {
  mark: Mark;
  /** One line: why. */
  reason: string;
  by: string;
  at: string;
}

/** The primary metric of a run: which key, which way is better, and where it stands. */
export interface PrimaryMetric {
  key: string;
  direction: MetricDirection;
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
  source: RunSource;
  status: RunStatus;
  step: number | null;
  epoch: number | null;
  max_steps: number | null;
  config: Record<string, unknown>;
  env: Record<string, unknown>;
  node_id: string | null;
  /** Runs of a Slurm pool: the Slurm job id, and the host Slurm ran it on once it started. */
  slurm?: { job_id: string; node: string | null };
  dropped_points: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  primary_metric: PrimaryMetric | null;
  /** The run this one continues or varies; null: a root of its tree. */
  parent_run: string | null;
  /** The checkpoint id it started from (GPUCTL_RESUME_FROM), or null. */
  resume_from: string | null;
  /** Kept or discarded, with the reason; null while undecided. */
  mark: RunMark | null;
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
  /** The file's modification time when it was registered (ISO 8601); null when not reported. */
  mtime: string | null;
  metrics: Record<string, unknown>;
  created_at: string;
  /** A later run registered the same path on the same host: the file is no longer this run's. */
  overwritten: boolean;
  /** The run whose checkpoint replaced this file. */
  overwritten_by_run: string | null;
  /**
   * Whether the file can be used: `valid`; `incomplete` (its bytes are not a complete file of
   * its format, `problem` says why); `overwritten` (see above); `gone` (the file no longer
   * exists). Recommendations and evaluations take only `valid` ones.
   */
  state: CheckpointState;
  /** Why an incomplete checkpoint is not complete; null otherwise. */
  problem: string | null;
  /** When the file was seen gone (ISO 8601); null while it exists. */
  gone_at: string | null;
  /** The content fingerprint its agent read (hex SHA-256 of the size and both ends); null when not reported. */
  fingerprint: string | null;
}

/** What a checkpoint's file is now: see `Checkpoint.state`. */
export type { CheckpointState };

/**
 * The label an agent on a Slurm submit host reports its partition in. It travels with the
 * node's other labels, so a Slurm pool needs nothing more in the hello.
 */
export const SLURM_PARTITION_LABEL = "gpuctl.slurm/partition";

/** A node that is a Slurm partition: its GPUs are Slurm's to place, not gpuctl's. */
export interface SlurmPool {
  kind: "slurm";
  partition: string;
}

/** The pool a node's labels describe, or null for a plain host. */
export function slurmPoolOf(labels: Record<string, string>): SlurmPool | null {
  const partition = labels[SLURM_PARTITION_LABEL];
  return partition ? { kind: "slurm", partition } : null;
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
  /** A Slurm partition an agent hands jobs to (see {@linkcode slurmPoolOf}); null: a plain host. */
  pool: SlurmPool | null;
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
  scope: DefinitionScope;
  scope_id: string;
  key: string;
  direction: MetricDirection;
  primary: boolean;
}

/** A token as listed: never the secret. */
export interface TokenInfo {
  id: string;
  name: string;
  scope: Scope;
  /** An agent token's node; null for the shared agent token (any node's first contact) and other scopes. */
  node_id: string | null;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  /** What its jobs and sweeps may use (absent or null: no limits). */
  budget?: TokenBudget | null;
}

/** Every list endpoint answers with this. */
export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** A metric value as JSON carries it: NaN and ±Infinity become strings (protocol/metric_value.ts). */
export { encodeMetricValue } from "./metric_value.ts";

/** An evaluation of a checkpoint with a suite: the EVALUATE job that runs it and its results. */
export interface Evaluation {
  id: string;
  checkpoint_id: string;
  job_id: string | null;
  suite: string;
  /** RUNNING while its job runs; COMPLETED once results arrived; FAILED when its job ended without. */
  status: "QUEUED" | "RUNNING" | "COMPLETED" | "FAILED";
  /** The results, as the evaluation reported them (NaN and ±Infinity as strings). */
  metrics: Record<string, unknown>;
  duration_s: number | null;
  created_at: string;
  finished_at: string | null;
}

/** A checkpoint with the evaluations of it. */
export interface CheckpointWithEvaluations extends Checkpoint {
  evaluations: Evaluation[];
}

/** The tools an agent is pointed to in `next_actions`; the MCP tools carry exactly these names. */
export type SemanticTool =
  | "diagnose_run"
  | "compare_runs"
  | "compare_checkpoints"
  | "get_best_checkpoint"
  | "explain_failure"
  | "evaluate_checkpoint"
  | "retry_job"
  | "cancel_job"
  | "get_logs"
  | "wait_for_run";

/** What to do next, so an agent need not poll or guess: a tool, its arguments, and why. */
export interface NextAction {
  tool: SemanticTool;
  args: Record<string, unknown>;
  why: string;
}

/** A metric value in a semantic answer: a number, or "NaN"/"Infinity"/"-Infinity". */
export type MetricNumber = number | string;

/** Which way a metric moved over the recent window, with the numbers behind the verdict. */
export interface MetricTrend {
  verdict: "improving" | "flat" | "worsening" | "unknown";
  /** The finite points compared: the earlier half of the window against the later half. */
  window: { from_step: number; to_step: number; points: number } | null;
  earlier_mean: number | null;
  later_mean: number | null;
  /** later_mean − earlier_mean. */
  change: number | null;
  /** change / |earlier_mean|. */
  relative_change: number | null;
  /** How much worse the latest level is than the run's best value, relative (0 at the best). */
  from_best: number | null;
  explanation: string;
}

/** One metric of a run (`GET /api/runs/{id}/metric-summary`): latest, best and trend. */
export interface MetricRow {
  key: string;
  points: number;
  latest: number | string;
  latest_step: number;
  /** Which way is better: the key's metric definition, else its name; null when unknown. */
  direction: MetricDirection | null;
  best: number | null;
  best_step: number | null;
  trend: MetricTrend["verdict"];
}

/** An anomaly of a run: raised as an event, or seen in the data by the diagnosis itself. */
export interface RunAnomaly {
  type: string;
  severity: Severity;
  count: number;
  last_at: string | null;
  message: string;
  source: "event" | "observed";
}

/** `GET /api/runs/{id}/diagnosis`: the health of a run in one answer. */
export interface RunDiagnosis {
  run_id: string;
  name: string;
  project: string;
  experiment: string | null;
  job_id: string | null;
  status: RunStatus;
  progress: {
    step: number | null;
    epoch: number | null;
    max_steps: number | null;
    /** step / max_steps, 0..1. */
    fraction: number | null;
  };
  rate: { steps_per_s: number; key: string; window_points: number } | null;
  eta: { remaining_steps: number; seconds: number; at: string } | null;
  last_activity: { at: string; seconds_ago: number } | null;
  primary_metric:
    | {
      key: string;
      direction: MetricDirection;
      latest: MetricNumber | null;
      best: number | null;
      best_step: number | null;
      trend: MetricTrend;
    }
    | null;
  anomalies: RunAnomaly[];
  recent_events: { id: number; ts: string; type: string; severity: Severity; message: string }[];
  gpu: { mean_util: number; gpus: { index: number; latest: number | null; mean: number }[] } | null;
  failure:
    | { likely_cause: string; confidence: number; cause_id: string; retry_advice: string }
    | null;
  summary: string;
  next_actions: NextAction[];
}

/** One run in `GET /api/runs/compare`. */
export interface ComparedRun {
  run_id: string;
  name: string;
  status: RunStatus;
  project: string;
  experiment: string | null;
  /** The key compared for this run (its primary metric when none was asked for). */
  metric_key: string | null;
  best: number | null;
  best_step: number | null;
  latest: MetricNumber | null;
  latest_step: number | null;
  steps: number | null;
  duration_s: number | null;
  /** 1 is best; null when the run has no value of the metric or the runs are not comparable. */
  rank: number | null;
}

/** `GET /api/runs/compare`: runs side by side on one metric, with what differs in their configs. */
export interface RunComparison {
  metric: { key: string; direction: MetricDirection } | null;
  comparable: boolean;
  /** Why the runs cannot be ranked, when they cannot. */
  reason: string | null;
  /** Metric keys (not `sys/`) every run has: candidates for `metric`. */
  common_keys: string[];
  runs: ComparedRun[];
  /** Run ids, best first. */
  ranking: string[];
  /** Config keys (flattened with dots) whose values differ; a run without the key shows null. */
  config_diff: { key: string; values: Record<string, unknown> }[];
  identical_config_keys: number;
  /** How each run's code differs from the first run's (next to the config diff). */
  code_diff?: CodeComparison[];
  summary: string;
  next_actions: NextAction[];
}

/** How a checkpoint scores: on a held-out evaluation, or on the training-time metric. */
export interface CheckpointScore {
  basis: "evaluation" | "training_metric";
  key: string;
  direction: MetricDirection;
  suite: string | null;
  value: MetricNumber;
}

/** One checkpoint in a comparison or recommendation. */
export interface RankedCheckpoint {
  checkpoint_id: string;
  run_id: string;
  step: number | null;
  epoch: number | null;
  path: string;
  created_at: string;
  /** The run's primary metric at the checkpoint's step (training time). */
  train_metric: { key: string; value: MetricNumber } | null;
  evaluations: Evaluation[];
  score: CheckpointScore | null;
  /** 1 is best; null when the checkpoint has nothing to rank it by, or is excluded. */
  rank: number | null;
  /** Why it is never recommended (its file was overwritten, it was saved after a NaN loss). */
  excluded: string | null;
}

/** `GET /api/runs/{id}/checkpoints:compare`. */
export interface CheckpointComparison {
  run_id: string;
  /** What ranks the checkpoints: evaluation results when any exist, else the training metric. */
  basis: "evaluation" | "training_metric" | "none";
  metric: { key: string; direction: MetricDirection; suite: string | null } | null;
  checkpoints: RankedCheckpoint[];
  summary: string;
  next_actions: NextAction[];
}

/** `GET /api/checkpoints:recommend`: the checkpoint to use, and why. */
export interface CheckpointRecommendation {
  scope: { run_id: string } | { experiment: string };
  checkpoint: RankedCheckpoint | null;
  basis: "evaluation" | "training_metric" | null;
  metric: string | null;
  direction: MetricDirection | null;
  suite: string | null;
  value: MetricNumber | null;
  reason: string;
  alternatives: {
    checkpoint_id: string;
    run_id: string;
    step: number | null;
    rank: number | null;
    score: CheckpointScore | null;
    note: string;
  }[];
  considered: { checkpoints: number; evaluated: number };
  /** Checkpoints left out of the choice, and why. */
  skipped: { checkpoint_id: string; run_id: string; step: number | null; why: string }[];
  summary: string;
  next_actions: NextAction[];
}

/** `GET /api/runs/{id}/failure`: why a run failed, what to change, and what to do next. */
export interface FailureExplanation {
  run_id: string;
  job_id: string | null;
  status: RunStatus;
  likely_cause: string;
  confidence: number;
  cause_id: string;
  evidence: { kind: string; detail: string; line_no?: number }[];
  suggested_fixes: string[];
  retry_advice: string;
  /** fails_again, may_help, not_a_failure or unknown. */
  retry: string;
  last_checkpoint: { checkpoint_id: string; step: number | null; path: string } | null;
  summary: string;
  next_actions: NextAction[];
}

/** What a project's or an experiment's runs add up to, for lists and overviews. */
export interface ScopeActivity {
  /** Its runs counted by status (statuses with none are left out), and their total. */
  runs: { total: number; by_status: Partial<Record<RunStatus, number>> };
  /**
   * Its primary metric (experiment → project → global, then a known loss key of its runs)
   * and the best value any of its runs reached, with that run and step; `value` null when no
   * run has a value of it; null when no primary metric resolves.
   */
  best_primary: {
    key: string;
    direction: MetricDirection;
    value: number | null;
    run_id: string | null;
    step: number | null;
  } | null;
  /** The newest of its own update, its runs' updates and their newest metric point. */
  last_activity_at: string;
}

/** `GET /api/projects` item. */
export type ProjectSummary = Project & ScopeActivity;

/** `GET /api/experiments` item. */
export type ExperimentSummary = Experiment & ScopeActivity;

/** One run's series of one metric key, as `POST /api/runs/metrics:query` returns it. */
export interface Series {
  run_id: string;
  key: string;
  steps: number[];
  /** Values in the metric-value encoding: numbers, or "NaN" / "Infinity" / "-Infinity". */
  values: (number | string)[];
  wall_times: number[];
  /** Each point's bucket minimum and maximum, when the series was downsampled. */
  min?: (number | string)[];
  max?: (number | string)[];
  /** Points in the series (or in `range`) before downsampling. */
  total_points: number;
  /** True when the series had more than `max_points` and was downsampled with LTTB. */
  downsampled: boolean;
}
