/**
 * The EVALUATE job a checkpoint evaluation runs: the training job's settings with the request's
 * overrides, pinned to the checkpoint's node, with the checkpoint and output variables set.
 */
import type { Checkpoint, Job } from "../../protocol/objects.ts";
import type { EvaluationRequest } from "../../protocol/rest/checkpoints.ts";
import { MAX_NAME_LENGTH } from "../../protocol/rest/fields.ts";
import type { JobSubmission } from "../../protocol/rest/jobs.ts";
import { invalidField, type ValidationError } from "../errors.ts";

/** What an evaluation job is built from: the checkpoint, its run, the run's job and project. */
export interface EvaluationFacts {
  evaluation_id: string;
  checkpoint: Checkpoint;
  run: {
    id: string;
    name: string;
    project: string;
    experiment: string | null;
    /** The node the run trained on: its checkpoint paths are local to that host. */
    node_id: string | null;
  };
  /** The job that trained the run; null for SDK and imported runs. */
  training_job: Job | null;
  /** The project's `eval_command`, the default command. */
  eval_command: string | null;
  request: EvaluationRequest;
}

/** Where an evaluation job writes its results when it does not use the SDK. */
export function evalOutputPath(workingDir: string, evaluationId: string): string {
  return `${workingDir.replace(/\/+$/, "")}/.gpuctl/eval-${evaluationId}.json`;
}

function missing(field: string, problem: string): ValidationError {
  return invalidField("evaluation request", field, problem);
}

/**
 * The EVALUATE job for a checkpoint: the training job's working dir, env, GPU count, runner,
 * image and priority (the request overrides each), pinned to the node that wrote the
 * checkpoint, with `GPUCTL_CHECKPOINT_PATH`, `GPUCTL_CHECKPOINT_ID`, `GPUCTL_EVALUATION_ID`,
 * `GPUCTL_EVAL_SUITE` and `GPUCTL_EVAL_OUTPUT` set. A 400 names `command` or `working_dir` when
 * neither the request nor the job or project supplies it.
 */
export function buildEvaluationSubmission(f: EvaluationFacts): JobSubmission {
  const req = f.request;
  const job = f.training_job;
  const command = req.command ?? f.eval_command;
  if (command === undefined || command === null || command === "") {
    throw missing(
      "command",
      `is required: project "${f.run.project}" has no eval_command; pass command, ` +
        `or set the project's eval_command (POST /api/projects)`,
    );
  }
  const workingDir = req.working_dir ?? job?.working_dir;
  if (!workingDir) {
    throw missing(
      "working_dir",
      `is required: run "${f.run.id}" was not started by a job, so there is no working_dir ` +
        "to inherit",
    );
  }
  const env: Record<string, string> = {
    ...(job?.env ?? {}),
    GPUCTL_CHECKPOINT_PATH: f.checkpoint.path,
    GPUCTL_CHECKPOINT_ID: f.checkpoint.id,
    GPUCTL_EVALUATION_ID: f.evaluation_id,
    GPUCTL_EVAL_SUITE: req.suite,
    GPUCTL_EVAL_OUTPUT: evalOutputPath(workingDir, f.evaluation_id),
  };
  const at = f.checkpoint.step === null ? "" : ` @ step ${f.checkpoint.step}`;
  const name = `eval ${req.suite}: ${f.run.name}${at}`.slice(0, MAX_NAME_LENGTH);
  const node = req.node ?? job?.node ?? f.run.node_id ?? undefined;
  const runner = job?.runner ?? "process";
  return {
    name,
    command,
    shell: typeof command === "string",
    working_dir: workingDir,
    gpus: req.gpus ?? job?.gpus ?? 0,
    env,
    ...(job?.secret_env.length ? { secret_env: job.secret_env } : {}),
    project: f.run.project,
    ...(f.run.experiment ? { experiment: f.run.experiment } : {}),
    runner,
    ...(runner === "docker" && job?.image ? { image: job.image } : {}),
    ...(node ? { node } : {}),
    priority: req.priority ?? job?.priority ?? 0,
  };
}
