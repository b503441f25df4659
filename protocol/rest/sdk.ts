/**
 * What the SDK and imports send: run registration, log batches (metric points, checkpoints,
 * log lines, an evaluation) and `POST /api/imports`. The agent's data frames reuse these parts.
 */
import { z } from "zod";
import { metricValue } from "../metric_value.ts";
import { provenance } from "../provenance.ts";
import { REPORTED_CHECKPOINT_STATES } from "../vocabulary.ts";
import { freeObject, id, MAX_NAME_LENGTH, name, text } from "./fields.ts";

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
  state: z.enum(REPORTED_CHECKPOINT_STATES).optional(),
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

/** The most items of each list one log batch may carry. */
export const SDK_BATCH_LIMITS = { points: 100_000, checkpoints: 1000, logs: 10_000 } as const;

/** `POST /api/sdk/runs/{id}/log` (and the agent's local ingest endpoint): one batch. */
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
