/**
 * gpuctl's words for states and kinds, each an `as const` list with its union type: every
 * schema, table and description elsewhere derives from these lists, so adding a word is one
 * edit here. Dependency-free.
 */

/** How a job runs on its node (a submission's `runner`). */
export const JOB_RUNNERS = ["process", "docker"] as const;
export type JobRunner = typeof JOB_RUNNERS[number];

/** How an agent runs the jobs it is given (`agent.yaml`'s `runner`): itself, or through Slurm. */
export const NODE_RUNNERS = ["process", "slurm"] as const;
export type NodeRunner = typeof NODE_RUNNERS[number];

/** Every runner that holds an attempt (what a reattach handle names): the two lists together. */
export type RunnerKind = JobRunner | NodeRunner;
export const RUNNER_KINDS = [...new Set([...JOB_RUNNERS, ...NODE_RUNNERS])] as [
  RunnerKind,
  ...RunnerKind[],
];

export const JOB_STATUSES = [
  "QUEUED",
  "DISPATCHED",
  "RUNNING",
  "SUCCEEDED",
  "FAILED",
  "CANCELLED",
  "LOST",
] as const;
export type JobStatus = typeof JOB_STATUSES[number];

export const RUN_STATUSES = [
  "QUEUED",
  "RUNNING",
  "SUCCEEDED",
  "FAILED",
  "CANCELLED",
  "LOST",
  "IMPORTED",
] as const;
export type RunStatus = typeof RUN_STATUSES[number];

export const FAILURE_CLASSES = [
  "OOM",
  "EXIT_CODE",
  "DISPATCH_FAILED",
  "NODE_LOST",
  "AGENT_RESTART",
  "SIGNAL",
  "CANCELLED",
] as const;
export type FailureClass = typeof FAILURE_CLASSES[number];

export const SEVERITIES = ["info", "warning", "critical"] as const;
export type Severity = typeof SEVERITIES[number];

/** What a token may do: read < write < admin (each includes the one before); agent: a node's. */
export const SCOPES = ["read", "write", "admin", "agent"] as const;
export type Scope = typeof SCOPES[number];

/** A sweep's status: running until its trials end, then how it ended. */
export const SWEEP_STATUSES = ["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"] as const;
export type SweepStatus = typeof SWEEP_STATUSES[number];

/** Where a run came from: a job's attempt, the SDK outside jobs, or an import. */
export const RUN_SOURCES = ["job", "sdk", "import"] as const;
export type RunSource = typeof RUN_SOURCES[number];

/** Which way a metric is better: lower (`min`) or higher (`max`). */
export const METRIC_DIRECTIONS = ["min", "max"] as const;
export type MetricDirection = typeof METRIC_DIRECTIONS[number];

/** Where a metric definition applies: every run, one project's, or one experiment's. */
export const DEFINITION_SCOPES = ["global", "project", "experiment"] as const;
export type DefinitionScope = typeof DEFINITION_SCOPES[number];

/** A run's mark in its experiment's tree: a line worth following, or a dead end. */
export const RUN_MARKS = ["kept", "discarded"] as const;
export type Mark = typeof RUN_MARKS[number];

/** What a job does when its node goes silent (a submission's `on_node_lost`). */
export const NODE_LOST_POLICIES = ["requeue", "wait"] as const;
export type NodeLostPolicy = typeof NODE_LOST_POLICIES[number];

/**
 * A checkpoint's state as stored. The agent reports `valid`, `incomplete` or `gone`;
 * `overwritten` is the server's finding (another run's weights at the path now).
 */
export const CHECKPOINT_STATES = ["valid", "incomplete", "overwritten", "gone"] as const;
export type CheckpointState = typeof CHECKPOINT_STATES[number];
/** The states an agent reports for a checkpoint it found. */
export const REPORTED_CHECKPOINT_STATES = ["valid", "incomplete", "gone"] as const;

/** A list of words for a help or description text: `a, b or c` (each in quotes if asked). */
export function wordList(words: readonly string[], quoted = false): string {
  const w = quoted ? words.map((x) => `"${x}"`) : [...words];
  return w.length < 2 ? w.join("") : `${w.slice(0, -1).join(", ")} or ${w.at(-1)}`;
}
