/**
 * `/jobs`: every job with its status, and for write sessions the submit form (validated on
 * the server, problems shown next to their fields, what was typed kept) and cancel/retry.
 */
import type { ComponentChildren } from "preact";
import { FormField } from "../components/form_field.tsx";
import { Island } from "../components/island.tsx";
import JobsTable, { type JobRow } from "../islands/JobsTable.tsx";
import { JOB_STATUSES } from "../protocol/vocabulary.ts";
import type { Job } from "../protocol/objects.ts";
import { cancelJob, listJobs, retryJob } from "../server/jobs/service.ts";
import { confirmedAction, Notice } from "../server/console/actions.tsx";
import { type JobFormValues, submitJobForm } from "../server/console/job_form.ts";
import type { JobDryRun } from "../server/jobs/dry_run.ts";
import type { PageRequest, PageRoute } from "../server/console/page.tsx";
import { nowMs, pathSegment, shellPage } from "../server/console/shell.tsx";

const jobRow = (j: Job): JobRow => ({
  id: j.id,
  name: j.name,
  kind: j.kind,
  project: j.project,
  experiment: j.experiment,
  status: j.status,
  failure_class: j.failure_class,
  reason: j.reason,
  priority: j.priority,
  attempt: j.attempt,
  max_attempts: j.max_attempts,
  command: j.command,
  gpus: j.gpus,
  node_id: j.node_id,
  gpu_indices: j.gpu_indices,
  run_id: j.run_id,
  created_at: j.created_at,
  started_at: j.started_at,
  finished_at: j.finished_at,
});

function Field(
  { name, values, errors, type = "text", ...rest }: {
    name: string;
    label: string;
    hint?: string;
    values: JobFormValues;
    errors: Record<string, string>;
    wide?: boolean;
    type?: string;
    placeholder?: string;
    children?: ComponentChildren;
  },
) {
  return (
    <FormField
      id={`f-${name}`}
      name={name}
      type={type}
      value={values[name as keyof JobFormValues] ?? ""}
      error={errors[name]}
      {...rest}
    />
  );
}

function SubmitForm(
  { values, errors, open, plan }: {
    values: JobFormValues;
    errors: Record<string, string>;
    open: boolean;
    plan?: JobDryRun;
  },
) {
  const f = { values, errors };
  return (
    <details class="panel drawer" id="submit" data-drawer open={open}>
      <summary>Submit a job</summary>
      <form method="post" action="/jobs" novalidate>
        {errors.form && <p class="field-error" role="alert">{errors.form}</p>}
        {plan && <DryRunNote plan={plan} />}
        <div class="form-grid">
          <Field name="name" label="Name" placeholder="lr-0.01" {...f} />
          <Field name="project" label="Project" hint="default: default" {...f} />
          <Field name="experiment" label="Experiment" hint="optional" {...f} />
          <Field name="command" label="Command" wide {...f}>
            <textarea
              id="f-command"
              name="command"
              rows={2}
              spellcheck={false}
              placeholder="python train.py --lr 0.01"
              aria-invalid={errors.command ? "true" : undefined}
              aria-describedby={errors.command ? "f-command-error" : "f-command-hint"}
            >
              {values.command ?? ""}
            </textarea>
          </Field>
          <Field
            name="working_dir"
            label="Working dir"
            hint="on the GPU host"
            placeholder="/home/me/project"
            {...f}
          />
          <Field name="gpus" label="GPUs" type="text" hint="0 for CPU only" {...f} />
          <Field name="priority" label="Priority" hint="higher starts first; default 0" {...f} />
          <Field name="max_steps" label="Max steps" hint="optional, for progress" {...f} />
          <Field
            name="tensorboard_dir"
            label="TensorBoard dir"
            hint="watched for scalars (optional)"
            {...f}
          />
          <Field
            name="checkpoint_dir"
            label="Checkpoint dir"
            hint="watched for checkpoints (optional)"
            {...f}
          />
          <Field name="node" label="Node" hint="only on this node (optional)" {...f} />
        </div>
        <div class="form-actions">
          <button type="submit" class="primary">Submit job</button>
          <button type="submit" name="dry_run" value="1" data-dry-run>Check</button>
          <span class="muted small">
            The command runs with <code>bash -lc</code> in the working dir.
          </span>
        </div>
      </form>
    </details>
  );
}

/** What a "Check" found: where and when the job would start, and the budget after. */
function DryRunNote({ plan }: { plan: JobDryRun }) {
  const lines = Object.entries(plan.budget_after ?? {}).flatMap(([name, l]) =>
    l ? [`${name}: ${l.used === null ? `limit ${l.limit}` : `${l.used} of ${l.limit} used`}`] : []
  );
  return (
    <p class="notice" role="status" data-dry-run-result>
      {plan.summary}
      {lines.length > 0 && ` Budget after: ${lines.join("; ")}.`}
    </p>
  );
}

function jobsPage(
  p: PageRequest,
  form: { values: JobFormValues; errors: Record<string, string>; plan?: JobDryRun } = {
    values: {},
    errors: {},
  },
  status = 200,
): Response {
  const statusFilter = p.url.searchParams.get("status") ?? "";
  const project = p.url.searchParams.get("project") ?? "";
  const filter = new URLSearchParams();
  if ((JOB_STATUSES as readonly string[]).includes(statusFilter)) {
    filter.set("status", statusFilter);
  }
  if (project) filter.set("project", project.slice(0, 200));
  const jobs = listJobs(p.ctx, {
    status: filter.get("status") as Job["status"] | undefined ?? undefined,
    project: filter.get("project") ?? undefined,
  }).items;
  const query = filter.toString();
  const open = p.url.searchParams.has("submit") || Object.keys(form.errors).length > 0 ||
    form.plan !== undefined;
  return shellPage(
    p,
    {
      title: "Jobs",
      path: "/jobs",
      status,
      action: <a class="button primary" href="/jobs?submit=1#submit">+ submit job</a>,
    },
    <>
      <Notice url={p.url} req={p.req} />
      {p.canWrite && (
        <SubmitForm values={form.values} errors={form.errors} open={open} plan={form.plan} />
      )}
      <form method="get" action="/jobs" class="filters">
        <label>
          Status
          <select name="status">
            <option value="">any</option>
            {JOB_STATUSES.map((s) => (
              <option key={s} value={s} selected={s === statusFilter}>{s}</option>
            ))}
          </select>
        </label>
        <label>
          Project
          <input name="project" value={project} data-search placeholder="any" />
        </label>
        <button type="submit">Filter</button>
        {query && <a href="/jobs">clear</a>}
      </form>
      <section class="panel">
        <Island
          component={JobsTable}
          props={{
            jobs: jobs.map(jobRow),
            query,
            canWrite: p.canWrite,
            next: `/jobs${query ? `?${query}` : ""}`,
            now: nowMs(p.ctx),
          }}
        />
      </section>
    </>,
  );
}

export const routes: PageRoute[] = [
  { method: "GET", path: "/jobs", scope: "read", handler: (p) => jobsPage(p) },
  {
    method: "POST",
    path: "/jobs",
    scope: "write",
    action: "submitting a job",
    handler: async (p) => {
      const result = await submitJobForm(p.ctx, p.req, p.principal?.token_id ?? null);
      if (result.ok === "dry_run") {
        return jobsPage(p, { values: result.values, errors: {}, plan: result.plan });
      }
      if (!result.ok) return jobsPage(p, result, 400);
      return p.redirect(
        `/jobs?notice=${
          encodeURIComponent(`Job "${result.job.name}" (${result.job.id}) queued`)
        }#${result.job.id}`,
      );
    },
  },
  {
    method: "POST",
    path: "/jobs/:id/cancel",
    scope: "write",
    action: "cancelling a job",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        question:
          `Cancel job ${id}? A running job gets SIGTERM, then SIGKILL after its grace period.`,
        yes: "Yes, cancel",
        fallback: "/jobs",
        run: () => {
          const job = cancelJob(p.ctx, id, p.principal!.name);
          return job.status === "CANCELLED"
            ? `Job "${job.name}" cancelled`
            : `Cancel of "${job.name}" sent to ${job.node_id ?? "its node"}`;
        },
      });
    },
  },
  {
    method: "POST",
    path: "/jobs/:id/retry",
    scope: "write",
    action: "retrying a job",
    handler: (p) => {
      const id = pathSegment(p, 1);
      return confirmedAction(p, {
        question: `Requeue job ${id} as its next attempt?`,
        yes: "Yes, retry",
        fallback: "/jobs",
        run: () => {
          const job = retryJob(p.ctx, id, p.principal!.name);
          return `Job "${job.name}" requeued as attempt ${job.attempt}`;
        },
      });
    },
  },
];
