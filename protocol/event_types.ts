/**
 * Every event type gpuctl raises. `GET /api/events?type=` accepts these (and any type already
 * stored, so an agent newer than its server can still be filtered on) and answers 400 with
 * this list for anything else. A test walks the sources for types missing here.
 */
export const EVENT_TYPES = [
  // jobs and runs
  "JOB_QUEUED",
  "JOB_DISPATCHED",
  "JOB_RETRIED",
  "JOB_DEPENDENCY_FAILED",
  "JOB_FENCED",
  "RUN_STARTED",
  "RUN_SUCCEEDED",
  "RUN_FAILED",
  "RUN_CANCELLED",
  "RUN_LOST",
  "OOM",
  "POINTS_DROPPED",
  "TENSORBOARD_MISSING",
  // sweeps
  "SWEEP_TRIAL_STOPPED",
  "SWEEP_FINISHED",
  // checkpoints and evaluations
  "CHECKPOINT_CREATED",
  "CHECKPOINT_OVERWRITTEN",
  "CHECKPOINT_INCOMPLETE",
  "EVALUATION_COMPLETED",
  "EVALUATION_FAILED",
  // rules over metrics and telemetry
  "LOSS_NAN",
  "LOSS_SPIKE",
  "OVERFITTING_SUSPECTED",
  "GPU_UNDERUTILIZED",
  "STALLED",
  // nodes and agents
  "NODE_ONLINE",
  "NODE_OFFLINE",
  "DISK_LOW",
  "SPOOL_FULL",
  "FOREIGN_GPU_PROCESS",
] as const;
export type EventType = typeof EVENT_TYPES[number];

/**
 * The anomaly event types (the others are lifecycle events): a job may be stopped on these
 * (`stop_on`), and every wait wakes on them.
 */
export const ANOMALY_EVENT_TYPES = [
  "OOM",
  "LOSS_NAN",
  "LOSS_SPIKE",
  "OVERFITTING_SUSPECTED",
  "GPU_UNDERUTILIZED",
  "DISK_LOW",
  "STALLED",
] as const satisfies readonly EventType[];
export type AnomalyEventType = typeof ANOMALY_EVENT_TYPES[number];
