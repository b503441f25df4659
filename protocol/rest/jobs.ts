/** What `POST /api/jobs` (and `submit_job`) accepts, and the filters of `GET /api/jobs`. */
import { z } from "zod";
import { ANOMALY_EVENT_TYPES } from "../event_types.ts";
import { dryRunField } from "../budgets.ts";
import { JOB_RUNNERS, JOB_STATUSES, NODE_LOST_POLICIES, wordList } from "../vocabulary.ts";
import {
  command,
  ENV_NAME,
  gpuCount,
  id,
  MAX_NAME_LENGTH,
  name,
  pageQuery,
  priority,
  text,
} from "./fields.ts";

/** `POST /api/jobs`. */
export const jobSubmission = z.strictObject({
  name: name.describe('A short name for the job, e.g. "lr-3e-4"'),
  command: command.describe(
    'The program and its arguments, e.g. ["python3", "train.py", "--lr", "0.001"]; a string ' +
      "is run with bash -lc",
  ),
  shell: z.boolean().optional().describe("Run an argv command through bash -lc (default false)"),
  working_dir: text.min(1, "must not be empty").regex(/^\//, "must be an absolute path").describe(
    "The directory the command runs in, on the GPU host (an absolute path)",
  ),
  gpus: gpuCount.describe(
    "How many GPUs the job gets, all on one node (0: a CPU-only job)",
  ),
  priority: priority.optional().describe(
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
    `How the job runs on its node: ${wordList(JOB_RUNNERS, true)} (default "process")`,
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
  on_node_lost: z.enum(NODE_LOST_POLICIES).optional().describe(
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
