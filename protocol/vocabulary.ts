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
