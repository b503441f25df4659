/**
 * The console's job submission form: its fields as typed, turned into a job submission that
 * crosses the same schema as `POST /api/jobs`, with every problem named by its field.
 */
import { type JobSubmission, jobSubmission } from "../../protocol/rest/jobs.ts";
import type { Context } from "../context.ts";
import { BudgetExceededError, ValidationError } from "../errors.ts";
import { submitJob } from "../jobs/service.ts";
import { dryRunJob, type JobDryRun } from "../jobs/dry_run.ts";
import type { Job } from "../../protocol/objects.ts";
import { readForm } from "./form.ts";
import { z } from "zod";

/** The form's fields, as strings (what was typed is shown again after a refusal). */
export const JOB_FORM_FIELDS = [
  "name",
  "command",
  "working_dir",
  "gpus",
  "priority",
  "project",
  "experiment",
  "max_steps",
  "tensorboard_dir",
  "checkpoint_dir",
  "node",
] as const;
export type JobFormField = typeof JOB_FORM_FIELDS[number];
export type JobFormValues = Partial<Record<JobFormField, string>>;

const formSchema = z.object({
  ...Object.fromEntries(JOB_FORM_FIELDS.map((f) => [f, z.string().max(65_536).optional()])),
  // The "Check" button: a dry run.
  dry_run: z.string().max(10).optional(),
}) as z.ZodType<JobFormValues & { dry_run?: string }>;

const WHOLE = /^-?\d+$/;

/** The submission the form describes, or the problems by field. */
export function submissionOf(
  v: JobFormValues,
): { ok: true; submission: JobSubmission } | { ok: false; errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const text = (f: JobFormField) => {
    const s = v[f]?.trim();
    return s ? s : undefined;
  };
  const whole = (f: JobFormField, required: boolean) => {
    const s = text(f);
    if (s === undefined) {
      if (required) errors[f] = "is required: a whole number";
      return undefined;
    }
    if (!WHOLE.test(s)) {
      errors[f] = `"${s}" is not a whole number`;
      return undefined;
    }
    return Number(s);
  };
  const raw = {
    name: v.name?.trim() ?? "",
    // A command typed in one line runs through the shell, like `bash -lc "…"`.
    command: v.command?.trim() ?? "",
    working_dir: v.working_dir?.trim() ?? "",
    gpus: whole("gpus", true),
    priority: whole("priority", false),
    max_steps: whole("max_steps", false),
    project: text("project"),
    experiment: text("experiment"),
    tensorboard_dir: text("tensorboard_dir"),
    checkpoint_dir: text("checkpoint_dir"),
    node: text("node"),
  };
  const parsed = jobSubmission.safeParse(
    Object.fromEntries(Object.entries(raw).filter(([, x]) => x !== undefined)),
  );
  if (!parsed.success) {
    for (const i of parsed.error.issues) {
      const f = String(i.path[0] ?? "form");
      errors[f] ??= f === "gpus" && raw.gpus === undefined ? errors[f] : i.message;
    }
  }
  if (Object.keys(errors).length || !parsed.success) return { ok: false, errors };
  return { ok: true, submission: parsed.data };
}

/**
 * Reads a posted form and submits the job (with its "Check" button, only a dry run of it);
 * refusals come back by field, with the values.
 */
export async function submitJobForm(
  ctx: Context,
  req: Request,
  /** The signed-in token: its budget holds. */
  by: string | null = null,
): Promise<
  | { ok: true; job: Job }
  | { ok: "dry_run"; plan: JobDryRun; values: JobFormValues }
  | { ok: false; errors: Record<string, string>; values: JobFormValues }
> {
  const form = await readForm(req, formSchema);
  if (!form.ok) return { ok: false, errors: form.errors, values: {} };
  const { dry_run: dryRun, ...values } = form.data;
  const s = submissionOf(values);
  if (!s.ok) return { ok: false, errors: s.errors, values };
  try {
    if (dryRun) return { ok: "dry_run", plan: dryRunJob(ctx, s.submission, by), values };
    return { ok: true, job: submitJob(ctx, s.submission, "TRAIN", { submitted_by: by }) };
  } catch (err) {
    if (err instanceof BudgetExceededError) {
      return { ok: false, errors: { form: err.message }, values };
    }
    if (!(err instanceof ValidationError)) throw err;
    const errors: Record<string, string> = {};
    for (const d of err.details) errors[d.field.split(".")[0]] ??= d.problem;
    return { ok: false, errors, values };
  }
}
