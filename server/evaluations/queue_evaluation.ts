/** Queues a checkpoint's evaluation: its EVALUATE job and its QUEUED record, in one transaction. */
import type { Evaluation, Job } from "../../protocol/objects.ts";
import type { EvaluationRequest } from "../../protocol/rest/checkpoints.ts";
import {
  checkpoints as checkpointsDb,
  evaluations as evaluationsDb,
  jobs as jobsDb,
  projects as projectsDb,
  runs as runsDb,
} from "../db/mod.ts";
import type { Context } from "../context.ts";
import { conflict, notFound } from "../errors.ts";
import { submitJob } from "../jobs/service.ts";
import { buildEvaluationSubmission } from "./build_submission.ts";
import { evaluationView } from "./list_evaluations.ts";
import { exclusionOf } from "../semantic/rank_checkpoints.ts";

/**
 * Queues the evaluation of a checkpoint with a suite: an EVALUATE job (see
 * `buildEvaluationSubmission`) and a QUEUED evaluation record linked to both, in one
 * transaction.
 */
export function queueEvaluation(
  ctx: Context,
  checkpointId: string,
  request: EvaluationRequest,
  /** The token whose budget the evaluation job counts against. */
  by: string | null = null,
): { evaluation: Evaluation; job: Job } {
  return ctx.db.tx(() => {
    const checkpoint = checkpointsDb.getCheckpoint(ctx.db, checkpointId);
    if (!checkpoint) throw notFound("Checkpoint", checkpointId);
    if (checkpoint.overwritten) {
      throw conflict(
        `Cannot evaluate checkpoint "${checkpointId}" ("${checkpoint.path}", run ` +
          `${checkpoint.run_id}): run ${checkpoint.overwritten_by_run} saved to the same path ` +
          "later, so the file holds that run's weights now; evaluate a checkpoint of run " +
          `${checkpoint.overwritten_by_run} instead`,
      );
    }
    if (checkpoint.state === "gone" || checkpoint.state === "incomplete") {
      throw conflict(
        `Cannot evaluate checkpoint "${checkpointId}" ("${checkpoint.path}", run ` +
          `${checkpoint.run_id}): ${exclusionOf(checkpoint)}; evaluate another checkpoint ` +
          "of the run (`checkpoint recommend` names the usable ones)",
      );
    }
    const run = runsDb.getRun(ctx.db, checkpoint.run_id);
    if (!run) throw notFound("Run", checkpoint.run_id);
    const trainingJob = run.job_id ? jobsDb.getJob(ctx.db, run.job_id) : null;
    const evaluationId = ctx.newId("ev");
    const submission = buildEvaluationSubmission({
      evaluation_id: evaluationId,
      checkpoint,
      run,
      // The stored job, not its public view: the evaluation needs the real secret values.
      training_job: trainingJob,
      eval_command: projectsDb.getProject(ctx.db, run.project)?.eval_command ?? null,
      request,
    });
    const job = submitJob(ctx, submission, "EVALUATE", { submitted_by: by });
    evaluationsDb.insertEvaluation(ctx.db, {
      id: evaluationId,
      checkpoint_id: checkpoint.id,
      job_id: job.id,
      suite: request.suite,
      created_at: ctx.now().toISOString(),
    });
    const stored = evaluationsDb.getEvaluation(ctx.db, evaluationId)!;
    return { evaluation: evaluationView(stored, job.status), job };
  });
}
