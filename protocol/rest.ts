/**
 * What the API accepts: the schemas of request bodies and query strings (submissions, SDK
 * batches, metric and run queries, tokens, …), the limits they hold to, and the scopes.
 */
import { z } from "zod";
import { ANOMALY_EVENT_TYPES, type AnomalyEventType } from "./event_types.ts";
import { metricValue } from "./metric_value.ts";
import { provenance } from "./provenance.ts";
import { MAX_STREAMED_RUNS } from "./limits.ts";
import { dryRunField, tokenBudget } from "./budgets.ts";
import {
  FAILURE_CLASSES,
  type FailureClass,
  JOB_RUNNERS,
  JOB_STATUSES,
  type JobRunner,
  type JobStatus,
  RUN_STATUSES,
  type RunStatus,
  SEVERITIES,
  type Severity,
} from "./vocabulary.ts";

/** The longest name (job, run, project, experiment, token, tag) accepted anywhere. */
export const MAX_NAME_LENGTH = 200;
/** The longest free-text string (a command, a path, an env value, a log line) accepted. */
export const MAX_TEXT_LENGTH = 65_536;
/** How deep free-form JSON (configs, metrics, event data) may nest. */
export const MAX_JSON_DEPTH = 32;

export {
  FAILURE_CLASSES,
  type FailureClass,
  JOB_RUNNERS,
  JOB_STATUSES,
  type JobRunner,
  type JobStatus,
  RUN_STATUSES,
  type RunStatus,
  SEVERITIES,
  type Severity,
};

export { ANOMALY_EVENT_TYPES, type AnomalyEventType };

export const SCOPES = ["read", "write", "admin", "agent"] as const;
export type Scope = typeof SCOPES[number];

const name = z.string().trim().min(1, "must not be empty").max(MAX_NAME_LENGTH)
  // deno-lint-ignore no-control-regex -- refusing control characters is the point
  .regex(/^[^\x00-\x1f\x7f-\x9f]*$/, "must not contain control characters");
const text = z.string().max(MAX_TEXT_LENGTH);
const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be a gpuctl id");

/** JSON nested at most MAX_JSON_DEPTH levels, any shape. */
export const freeJson = z.unknown().superRefine((value, ctx) => {
  if (jsonDepth(value) > MAX_JSON_DEPTH) {
    ctx.addIssue({ code: "custom", message: `nests deeper than ${MAX_JSON_DEPTH} levels` });
  }
});
const freeObject = z.record(z.string().max(MAX_NAME_LENGTH), freeJson);

function jsonDepth(value: unknown, depth = 0): number {
  if (depth > MAX_JSON_DEPTH) return depth;
  if (value === null || typeof value !== "object") return depth;
  let deepest = depth + 1;
  for (const v of Object.values(value as Record<string, unknown>)) {
    deepest = Math.max(deepest, jsonDepth(v, depth + 1));
    if (deepest > MAX_JSON_DEPTH) break;
  }
  return deepest;
}

/** A metric value: a finite number, or NaN/±Infinity spelled as JSON strings. */
export { metricValue };

export const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** `POST /api/jobs`. */
export const jobSubmission = z.strictObject({
  name: name.describe('A short name for the job, e.g. "lr-3e-4"'),
  command: z.union([
    z.array(text).min(1, "must name a program").max(4096),
    text.min(1, "must not be empty"),
  ]).describe(
    'The program and its arguments, e.g. ["python3", "train.py", "--lr", "0.001"]; a string ' +
      "is run with bash -lc",
  ),
  shell: z.boolean().optional().describe("Run an argv command through bash -lc (default false)"),
  working_dir: text.min(1, "must not be empty").regex(/^\//, "must be an absolute path").describe(
    "The directory the command runs in, on the GPU host (an absolute path)",
  ),
  gpus: z.number().int().min(0).max(64).describe(
    "How many GPUs the job gets, all on one node (0: a CPU-only job)",
  ),
  priority: z.number().int().min(-1_000_000).max(1_000_000).optional().describe(
    "Higher runs first (default 0)",
  ),
  max_attempts: z.number().int().min(1).max(20).optional().describe(
    "Attempts in all, counting retries of transient failures (default 3)",
  ),
  // zod reports a bad record key as "Invalid key in record": the rule goes in the message.
  env: z.record(z.string().regex(ENV_NAME), text, {
    error: (issue) =>
      issue.code === "invalid_key"
        ? "is not a valid environment variable name: names must match [A-Z_][A-Z0-9_]* " +
          "(upper-case letters, digits and _, not starting with a digit)"
        : undefined,
  }).optional().describe("Environment variables of the job: {NAME: value}"),
  project: name.optional().describe('The project the run belongs to (default "default")'),
  experiment: name.optional().describe(
    "The experiment within the project: runs of one experiment are compared with each other",
  ),
  tensorboard_dir: text.min(1).optional().describe(
    "A TensorBoard log dir (relative to working_dir) whose scalars become the run's metrics; " +
      "without it, the frameworks' default folders (runs/, lightning_logs/, logs/, tb_logs/, " +
      "in working_dir or one folder down) are followed",
  ),
  checkpoint_dir: text.min(1).optional().describe(
    "A directory (relative to working_dir) watched for checkpoint files",
  ),
  runner: z.enum(JOB_RUNNERS).optional().describe(
    `How the job runs on its node: ${
      JOB_RUNNERS.map((k) => `"${k}"`).join(" or ")
    } (default "process")`,
  ),
  image: text.min(1).optional().describe("The Docker image (runner docker)"),
  node: name.optional().describe("Run only on this node id"),
  after: z.array(id).max(100).optional().describe(
    "Job ids that must succeed before this one starts",
  ),
  max_steps: z.number().int().min(1).optional().describe(
    "The run's total steps, for progress and ETA",
  ),
  grace_s: z.number().min(0).max(3600).optional().describe(
    "Seconds between SIGTERM and SIGKILL on cancel (default 5)",
  ),
  /** Names in `env` whose values are never shown, besides those that look secret. */
  secret_env: z.array(z.string().regex(ENV_NAME, "env names must match [A-Z_][A-Z0-9_]*"))
    .max(1000).optional().describe("Names in env whose values are never shown"),
  stop_on: z.array(
    z.enum(ANOMALY_EVENT_TYPES, {
      error: (i) =>
        `${JSON.stringify(i.input)} is not an anomaly event type; use ${
          ANOMALY_EVENT_TYPES.join(", ")
        }`,
    }),
  ).max(ANOMALY_EVENT_TYPES.length * 4).optional().describe(
    `Anomaly events that cancel the job when raised on its run, e.g. ["LOSS_NAN"]; the ` +
      `types: ${ANOMALY_EVENT_TYPES.join(", ")}`,
  ),
  /**
   * When its node goes silent: "requeue" (the next attempt starts once the node's lease has
   * surely expired) or "wait" (never requeued by itself: the node's return or a manual retry).
   * @default "requeue"
   */
  on_node_lost: z.enum(["requeue", "wait"]).optional().describe(
    'When its node goes silent: "requeue" (default) or "wait"',
  ),
  parent_run: id.optional().describe(
    "The run this one continues or varies (its parent in the experiment's tree)",
  ),
  resume_from: id.optional().describe(
    "A checkpoint id the job starts from: its path is passed as GPUCTL_RESUME_FROM",
  ),
}).superRefine((s, ctx) => {
  if (s.runner === "docker" && !s.image) {
    ctx.addIssue({ code: "custom", path: ["image"], message: "is required when runner is docker" });
  }
  if (typeof s.command === "string" && s.shell === false) {
    ctx.addIssue({
      code: "custom",
      path: ["command"],
      message: "is a string but shell is false: pass an argv array, or set shell: true",
    });
  }
});

/** `POST /api/jobs` and `submit_job`: a submission, or with `dry_run` only its check. */
export const jobSubmitRequest = jobSubmission.safeExtend({ dry_run: dryRunField });
export type JobSubmitRequest = z.infer<typeof jobSubmitRequest>;
export type JobSubmission = z.infer<typeof jobSubmission>;

/** `POST /api/sdk/runs`: the SDK picks the id, so registering twice is harmless. */
export const sdkRunRegistration = z.strictObject({
  id: id.optional(),
  project: name.optional(),
  experiment: name.optional(),
  name: name.optional(),
  config: freeObject.optional(),
  env: freeObject.optional(),
  max_steps: z.number().int().min(1).optional(),
});
export type SdkRunRegistration = z.infer<typeof sdkRunRegistration>;

/**
 * A metric key: 1–200 characters, without control characters or lone UTF-16 surrogates,
 * which the store cannot keep as sent ("a\u0000" would be stored as "a", "a\ud800" as
 * "a\ufffd"), silently merging two series.
 */
export const metricKey = z.string().min(1).max(MAX_NAME_LENGTH).refine(
  // deno-lint-ignore no-control-regex -- control characters are what is refused
  (key) => key.isWellFormed() && !/[\u0000-\u001f\u007f]/.test(key),
  "must not contain control characters or lone surrogates",
);

export const metricPoint = z.strictObject({
  key: z.string().min(1).max(MAX_NAME_LENGTH),
  step: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  value: metricValue,
  wall_time: z.number().min(0).optional(),
});
export type MetricPointIn = z.infer<typeof metricPoint>;

/** A point sent by the SDK, whose keys come straight from user code. */
export const sdkMetricPoint = metricPoint.extend({ key: metricKey });

export const checkpointIn = z.strictObject({
  path: text.min(1),
  step: z.number().int().min(0).optional(),
  epoch: z.number().int().min(0).optional(),
  size_bytes: z.number().int().min(0).optional(),
  /** The file's modification time when it was registered, Unix seconds. */
  mtime: z.number().min(0).max(1e11).optional(),
  metrics: freeObject.optional(),
  /**
   * What the agent found: `valid` (the default), `incomplete` (its bytes are not a complete
   * file of its format: `problem` says why), or `gone` (the file at `path` no longer exists;
   * `size_bytes` and `mtime` are those last seen).
   */
  state: z.enum(["valid", "incomplete", "gone"]).optional(),
  problem: z.string().max(1000).optional(),
  /** The content fingerprint the agent read (hex SHA-256 of the size and both ends). */
  fingerprint: z.string().regex(/^[0-9a-f]{16,128}$/).optional(),
});
export type CheckpointIn = z.infer<typeof checkpointIn>;

export const logLineIn = z.strictObject({
  seq: z.number().int().min(0).optional(),
  ts: z.union([z.string().max(64), z.number()]).optional(),
  stream: z.enum(["stdout", "stderr", "system"]).optional(),
  text,
});
export type LogLineIn = z.infer<typeof logLineIn>;

/** `POST /api/sdk/runs/{id}/log` (and the agent's local ingest endpoint): one batch. */
/** The most items of each list one log batch may carry. */
export const SDK_BATCH_LIMITS = { points: 100_000, checkpoints: 1000, logs: 10_000 } as const;

export const sdkLogBatch = z.strictObject({
  points: z.array(sdkMetricPoint).max(SDK_BATCH_LIMITS.points).optional(),
  checkpoints: z.array(checkpointIn).max(SDK_BATCH_LIMITS.checkpoints).optional(),
  logs: z.array(logLineIn).max(SDK_BATCH_LIMITS.logs).optional(),
  evaluation: z.strictObject({ metrics: freeObject, suite: name.optional() }).optional(),
  status: z.enum(["SUCCEEDED", "FAILED", "CANCELLED"]).optional(),
  step: z.number().int().min(0).optional(),
  epoch: z.number().int().min(0).optional(),
  dropped: z.number().int().min(0).optional(),
  config: freeObject.optional(),
  env: freeObject.optional(),
  /** The run's code (the agent's snapshot of the working dir); the first one sent is kept. */
  provenance: provenance.optional(),
});
export type SdkLogBatch = z.infer<typeof sdkLogBatch>;

/** `POST /api/imports`: an old experiment folder becomes one run, once per `import_key`. */
export const importRegistration = z.strictObject({
  import_key: z.string().min(1).max(MAX_NAME_LENGTH),
  project: name,
  experiment: name.optional(),
  name,
  config: freeObject.optional(),
});
export type ImportRegistration = z.infer<typeof importRegistration>;

/** Series (distinct runs × distinct keys) one `metrics:query` may ask for. */
export const MAX_QUERY_SERIES = 100;
/** Points per series when a query names no `max_points`: enough for a chart. */
export const DEFAULT_MAX_POINTS = 2000;
/** The largest `max_points`; longer exports page with `GET /api/runs/{id}/metrics/points`. */
export const MAX_SERIES_POINTS = 100_000;
/** Points (series × `max_points`) one `metrics:query` answer may hold. */
export const MAX_QUERY_POINTS = 1_000_000;

/**
 * `POST /api/runs/metrics:query`. Duplicate runs and keys are removed; the work one query
 * can cause is bounded by MAX_QUERY_SERIES and MAX_QUERY_POINTS.
 */
export const metricsQueryFields = z.strictObject({
  runs: z.array(id).min(1).max(200).describe("Run ids"),
  keys: z.array(z.string().min(1).max(MAX_NAME_LENGTH)).min(1).max(200).describe(
    'Metric keys, e.g. ["train/loss", "eval/accuracy"]',
  ),
  max_points: z.number().int().min(3).max(MAX_SERIES_POINTS).optional().describe(
    "Points per series at most; longer series are downsampled (LTTB) keeping each bucket's " +
      "min and max",
  ),
  x: z.enum(["step", "wall"]).optional().describe(
    'What range is in: "step" (default) or "wall" (Unix s)',
  ),
  range: z.tuple([z.number(), z.number()]).optional().describe("[from, to] of x, inclusive"),
});
export const metricsQuery = metricsQueryFields.transform((q) => ({
  ...q,
  runs: [...new Set(q.runs)],
  keys: [...new Set(q.keys)],
}))
  .superRefine((q, ctx) => {
    const series = q.runs.length * q.keys.length;
    if (series > MAX_QUERY_SERIES) {
      ctx.addIssue({
        code: "custom",
        path: ["keys"],
        message: `${q.runs.length} runs × ${q.keys.length} keys = ${series} series ` +
          `(duplicates removed); at most ${MAX_QUERY_SERIES} per query`,
      });
    }
    const points = series * (q.max_points ?? DEFAULT_MAX_POINTS);
    if (series <= MAX_QUERY_SERIES && points > MAX_QUERY_POINTS) {
      ctx.addIssue({
        code: "custom",
        path: ["max_points"],
        message: `${series} series × ${q.max_points} points = ${points}; at most ` +
          `${MAX_QUERY_POINTS} per answer: ask fewer, or page a whole series with ` +
          "GET /api/runs/{id}/metrics/points",
      });
    }
    if (q.range && q.range[0] > q.range[1]) {
      ctx.addIssue({
        code: "custom",
        path: ["range"],
        message: `from ${q.range[0]} is after to ${q.range[1]}`,
      });
    }
  });
export type MetricsQuery = z.output<typeof metricsQuery>;

export const tokenCreate = z.strictObject({
  name,
  scope: z.enum(SCOPES),
  expires_at: z.iso.datetime({ offset: true }).optional(),
  /** Binds an agent token to one node id: it can speak only for that node. */
  node_id: name.optional(),
  /** What the jobs and sweeps it submits may use (protocol/budgets.ts). */
  budget: tokenBudget.optional(),
}).superRefine((t, ctx) => {
  if (t.node_id !== undefined && t.scope !== "agent") {
    ctx.addIssue({
      code: "custom",
      path: ["node_id"],
      message: `only an agent token is bound to a node; scope is "${t.scope}"`,
    });
  }
});
export type TokenCreate = z.infer<typeof tokenCreate>;

export const projectCreate = z.strictObject({
  name,
  description: text.optional(),
  primary_metric: name.optional(),
  eval_command: text.optional(),
});
export type ProjectCreate = z.infer<typeof projectCreate>;

export const experimentCreate = z.strictObject({
  project: name,
  name,
  description: text.optional(),
  primary_metric: name.optional(),
});
export type ExperimentCreate = z.infer<typeof experimentCreate>;

export const metricDefinition = z.strictObject({
  scope: z.enum(["global", "project", "experiment"]),
  scope_id: z.string().max(2 * MAX_NAME_LENGTH + 1).optional(),
  key: name,
  direction: z.enum(["min", "max"]),
  primary: z.boolean().optional(),
});
export type MetricDefinitionIn = z.infer<typeof metricDefinition>;

export const metricDefinitionsPut = z.strictObject({
  definitions: z.array(metricDefinition).min(1).max(1000),
});

/** Query strings of paginated lists. */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional().describe(
    "How many items to return (at most 1000)",
  ),
  cursor: z.string().regex(/^[0-9]{1,18}$/, "must be a cursor returned by this list").optional()
    .describe("The next_cursor of the previous page, to get the page after it"),
});

/** `GET /api/jobs`: newest first. */
export const jobListQuery = pageQuery.extend({
  status: z.enum(JOB_STATUSES).optional().describe("Only jobs in this status"),
  project: z.string().max(MAX_NAME_LENGTH).optional().describe("Only jobs of this project"),
  experiment: z.string().max(MAX_NAME_LENGTH).optional().describe(
    "Only jobs of this experiment (its name within the project)",
  ),
  node_id: z.string().max(MAX_NAME_LENGTH).optional().describe("Only jobs placed on this node"),
});
export type JobListQuery = z.infer<typeof jobListQuery>;

const RUN_SOURCES = ["job", "sdk", "import"] as const;

/** The filters of `GET /api/runs` and `GET /api/run-groups`; `q` searches run names and ids. */
const runFilterShape = {
  project: z.string().max(MAX_NAME_LENGTH).optional().describe("Only runs of this project"),
  experiment: z.string().max(MAX_NAME_LENGTH).optional().describe(
    "Only runs of this experiment (its name within the project)",
  ),
  status: z.enum(RUN_STATUSES).optional().describe("Only runs in this status"),
  job_id: z.string().max(MAX_NAME_LENGTH).optional().describe(
    "Only the runs (attempts) of this job",
  ),
  source: z.enum(RUN_SOURCES).optional().describe('"job", "sdk" or "import"'),
  q: z.string().trim().max(MAX_NAME_LENGTH).optional().describe(
    "Only runs whose name or id contains this (any case)",
  ),
};

/** `GET /api/runs`: newest first, each run with its primary metric. */
export const runListQuery = pageQuery.extend(runFilterShape);
export type RunListQuery = z.infer<typeof runListQuery>;

/** `GET /api/run-groups`: the same filters, runs counted by project and experiment. */
export const runGroupsQuery = z.object(runFilterShape);
export type RunGroupsQuery = z.infer<typeof runGroupsQuery>;

const keyList = z.string().max(20_000).transform((s) =>
  s.split(",").map((k) => k.trim()).filter(Boolean)
);

/** `GET /api/runs/{id}/metrics`: the run's keys; with `keys`, their series too. */
export const runMetricsQuery = z.object({
  keys: keyList.optional(),
  max_points: z.coerce.number().int().min(3).max(MAX_SERIES_POINTS).optional(),
});
export type RunMetricsQuery = z.infer<typeof runMetricsQuery>;

/** `GET /api/runs/{id}/metrics/points`: one page of a whole series. */
export const pointsPageQuery = z.object({
  key: z.string().min(1).max(MAX_NAME_LENGTH),
  cursor: z.string().regex(/^\d{1,16}$/, "must be the next_cursor of the previous page")
    .optional(),
  limit: z.coerce.number().int().min(1).max(MAX_SERIES_POINTS).optional(),
});
export type PointsPageQuery = z.infer<typeof pointsPageQuery>;

/** The most log lines one `GET /api/runs/{id}/logs` returns. */
export const MAX_LOG_LINES = 2000;

/**
 * `GET /api/runs/{id}/logs`: lines after `after_seq` (oldest first), or with no `after_seq`
 * the last `limit` lines (the tail).
 */
export const logsQuery = z.object({
  after_seq: z.coerce.number().int().min(0).optional().describe(
    "Return the lines after this seq, oldest first (without it: the last lines, the tail)",
  ),
  limit: z.coerce.number().int().min(1).max(MAX_LOG_LINES).optional().describe(
    `How many lines at most (at most ${MAX_LOG_LINES})`,
  ),
});
export type LogsQuery = z.infer<typeof logsQuery>;

/** The filters of `GET /api/events` and `GET /api/events/stream`; `severity`: at least this. */
const eventFilterShape = {
  run_id: z.string().max(MAX_NAME_LENGTH).optional().describe("Only events of this run"),
  job_id: z.string().max(MAX_NAME_LENGTH).optional().describe("Only events of this job"),
  node_id: z.string().max(MAX_NAME_LENGTH).optional().describe("Only events of this node"),
  type: z.string().max(MAX_NAME_LENGTH).optional().describe(
    'Only events of this type, e.g. "LOSS_NAN", "OOM", "RUN_FAILED", "CHECKPOINT_CREATED"',
  ),
  severity: z.enum(SEVERITIES).optional().describe(
    'Only events at least this severe: "info", "warning" or "critical"',
  ),
};

/** `GET /api/events`: newest first. */
export const eventListQuery = pageQuery.extend(eventFilterShape);
export type EventListQuery = z.infer<typeof eventListQuery>;

/** `GET /api/events/stream`: the same filters; `after` (or Last-Event-ID) resumes. */
export const eventStreamQuery = z.object({ ...eventFilterShape, after: z.string().optional() });
export type EventFilterQuery = z.infer<typeof eventStreamQuery>;

/**
 * `POST /api/checkpoints/{id}/evaluations`. The job inherits the training job's settings;
 * `working_dir` (and `command`, unless the project has an `eval_command`) are needed for a run
 * that no job produced.
 */
export const evaluationRequest = z.strictObject({
  suite: name.describe(
    'The evaluation suite\'s name, e.g. "heldout"; results are ranked per suite',
  ),
  command: z.union([
    z.array(text).min(1, "must name a program").max(4096),
    text.min(1, "must not be empty"),
  ]).optional().describe(
    "The evaluation command (default: the project's eval_command). It finds the checkpoint in " +
      '$GPUCTL_CHECKPOINT_PATH and writes {"metrics": {...}} to $GPUCTL_EVAL_OUTPUT',
  ),
  working_dir: text.min(1, "must not be empty").optional().describe(
    "Where it runs (default: the training job's working_dir)",
  ),
  gpus: z.number().int().min(0).max(64).optional().describe(
    "GPUs for the evaluation (default: the training job's)",
  ),
  node: name.optional().describe("Run it on this node (default: where the checkpoint was written)"),
  priority: z.number().int().min(-1_000_000).max(1_000_000).optional().describe(
    "Higher runs first (default: the training job's)",
  ),
});
export type EvaluationRequest = z.infer<typeof evaluationRequest>;

const idList = z.string().max(20_000).transform((s) =>
  s.split(",").map((x) => x.trim()).filter(Boolean)
);

/** The runs one comparison names: 2 to 50 ids. */
export const comparedRunIds = z.array(id).min(
  2,
  "must name at least 2 runs (comma-separated in a query)",
).max(
  50,
  "names more than 50 runs",
);

export { MAX_STREAMED_RUNS };

/** `GET /api/runs/metrics:stream?runs=a,b,c`: the live points of several runs in one stream. */
export const runsMetricsStreamQuery = z.object({
  runs: idList.pipe(
    z.array(id).min(1, "must name at least 1 run (comma-separated)").max(
      MAX_STREAMED_RUNS,
      `names more than ${MAX_STREAMED_RUNS} runs`,
    ),
  ),
});
export type RunsMetricsStreamQuery = z.infer<typeof runsMetricsStreamQuery>;

/** `GET /api/runs/compare?runs=a,b,c&metric=`. */
export const compareRunsQuery = z.object({
  runs: idList.pipe(comparedRunIds),
  metric: z.string().trim().min(1).max(MAX_NAME_LENGTH).optional(),
});

/** `GET /api/checkpoints:recommend?run=` or `?experiment=<project>/<experiment>`. */
export const recommendQuery = z.object({
  run: id.optional(),
  experiment: z.string().max(2 * MAX_NAME_LENGTH + 1).regex(
    /^[^/]+\/.+$/,
    'must be "<project>/<experiment>"',
  ).optional(),
}).superRefine((q, ctx) => {
  if ((q.run === undefined) === (q.experiment === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: ["run"],
      message: 'name exactly one of run or experiment ("<project>/<experiment>")',
    });
  }
});

/** `GET /api/experiments`: optionally one project's. */
export const experimentsQuery = z.object({
  project: z.string().max(200).optional().describe("Only this project's experiments"),
});
export type ExperimentsQuery = z.infer<typeof experimentsQuery>;

/**
 * `PUT /api/metric-definitions/primary`: makes `key` the primary metric of a scope. Without
 * `direction`, the key's direction in that scope (its definitions, then its name) is kept.
 */
export const primaryMetricSet = z.strictObject({
  scope: z.enum(["global", "project", "experiment"]).describe(
    "Where the primary metric applies: every run, one project's, or one experiment's",
  ),
  scope_id: z.string().max(2 * MAX_NAME_LENGTH + 1).optional().describe(
    'The project\'s name, or "<project>/<experiment>" (not for global)',
  ),
  key: name.describe('The metric key, e.g. "eval/accuracy"'),
  direction: z.enum(["min", "max"]).optional().describe(
    "Which way is better (default: the key's known direction, else its name)",
  ),
});
export type PrimaryMetricSet = z.infer<typeof primaryMetricSet>;
