/**
 * The console's job submission form: its fields as typed, turned into a job submission that
 * crosses the same schema as `POST /api/jobs`, with every problem named by its field.
 */
import { type JobSubmission, jobSubmission } from "../../protocol/rest/jobs.ts";
import type { Context } from "../context.ts";
import { submitJob } from "../jobs/service.ts";
import { dryRunJob, type JobDryRun } from "../jobs/dry_run.ts";
import type { Job } from "../../protocol/objects.ts";
import { parseFormInput, submitForm } from "./form.ts";
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

/** The submission's fields from the form's: whole numbers read, empty fields left out. */
function jobInput(v: JobFormValues, errors: Record<string, string>): Record<string, unknown> {
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
  return Object.fromEntries(Object.entries(raw).filter(([, x]) => x !== undefined));
}

/** The submission the form describes, or the problems by field. */
export function submissionOf(
  v: JobFormValues,
): { ok: true; submission: JobSubmission } | { ok: false; errors: Record<string, string> } {
  const parsed = parseFormInput(v, jobSubmission, jobInput);
  return parsed.ok ? { ok: true, submission: parsed.data } : parsed;
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
  const r = await submitForm(req, {
    fields: formSchema,
    schema: jobSubmission,
    input: jobInput,
    act: (submission, { dry_run: dryRun }) =>
      dryRun
        ? { ok: "dry_run" as const, plan: dryRunJob(ctx, submission, by) }
        : { ok: true as const, job: submitJob(ctx, submission, "TRAIN", { submitted_by: by }) },
  });
  const { dry_run: _, ...values } = r.values;
  if (!r.ok) return { ok: false, errors: r.errors, values };
  return r.result.ok === true ? r.result : { ...r.result, values };
}
