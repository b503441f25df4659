/**
 * The jobs list: status, priority, attempt, command, node and GPUs, duration, and for write
 * sessions cancel (running and queued jobs) and retry (ended ones), each behind a
 * confirmation. Read again whenever a job or run changes, so statuses move without a reload.
 */
import type { Job } from "../protocol/objects.ts";
import { fmtDuration, fmtInt, secondsBetween } from "./_format.ts";
import { type LiveEvent, useJson, useNow } from "./_live.ts";
import { RelTime, StatusBadge } from "./_ui.tsx";
import { useSteadyRows } from "./_steady.ts";
import ConfirmAction from "./ConfirmAction.tsx";

/** The fields of a job (`GET /api/jobs`) the table shows. */
export type JobRow = Pick<
  Job,
  | "id"
  | "name"
  | "kind"
  | "project"
  | "experiment"
  | "status"
  | "failure_class"
  | "reason"
  | "priority"
  | "attempt"
  | "max_attempts"
  | "command"
  | "gpus"
  | "node_id"
  | "gpu_indices"
  | "run_id"
  | "created_at"
  | "started_at"
  | "finished_at"
>;

export interface JobsTableProps {
  jobs: JobRow[];
  /** The list's filters, as `GET /api/jobs` takes them. */
  query: string;
  canWrite: boolean;
  /** The page's own path and query, to come back to after an action. */
  next: string;
  now: number;
}

const ACTIVE = new Set(["QUEUED", "DISPATCHED", "RUNNING"]);
const changes = (e: LiveEvent) => /^(JOB_|RUN_)/.test(e.type) || e.type === "OOM";

/** A command as one line: argv words quoted where needed. */
export function commandText(c: string[] | string): string {
  if (typeof c === "string") return c;
  return c.map((w) => /^[\w@%+=:,./-]+$/.test(w) ? w : `'${w.replaceAll("'", "'\\''")}'`).join(" ");
}

export default function JobsTable(
  { jobs: initial, query, canWrite, next, now: rendered }: JobsTableProps,
) {
  const { rows: jobs, hold } = useSteadyRows(
    useJson<{ items: JobRow[] }>(`/api/jobs${query ? `?${query}` : ""}`, {
      items: initial,
    }, { refreshOn: changes, everyMs: 10_000 }).items,
  );
  const now = useNow(rendered, 5_000);
  if (jobs.length === 0) {
    return (
      <p class="muted empty">
        No jobs{query ? " match these filters" : " yet"}. Submit one with the form above or{" "}
        <code>gpuctl job submit --gpus 1 -- python train.py</code>.
      </p>
    );
  }
  return (
    <div class="table-wrap" {...hold}>
      <table class="jobs-table">
        <thead>
          <tr>
            <th>Status</th>
            <th>Job</th>
            <th class="num">Priority</th>
            <th class="num">Attempt</th>
            <th>Command</th>
            <th>Node / GPUs</th>
            <th class="num">Duration</th>
            <th>Submitted</th>
            {canWrite && (
              <th>
                <span class="sr-only">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {jobs.map((j) => (
            <tr key={j.id} id={j.id} data-job={j.id} data-status={j.status}>
              <td>
                <StatusBadge status={j.status} />
                {j.failure_class && j.failure_class !== "CANCELLED" && (
                  <div class="small tone-failed">{j.failure_class}</div>
                )}
              </td>
              <td class="job-name">
                {j.run_id
                  ? <a href={`/runs/${encodeURIComponent(j.run_id)}`}>{j.name}</a>
                  : <span>{j.name}</span>}
                <div class="muted small">
                  <code class="id">{j.id}</code> · {j.project}
                  {j.experiment ? ` / ${j.experiment}` : ""}
                  {j.kind === "EVALUATE" ? " · evaluation" : ""}
                </div>
                {j.reason && ACTIVE.has(j.status) && <div class="muted small">{j.reason}</div>}
              </td>
              <td class="num">{fmtInt(j.priority)}</td>
              <td class="num">{j.attempt}/{j.max_attempts}</td>
              <td class="cmd-cell">
                <code class="cmd">{commandText(j.command)}</code>
              </td>
              <td class="nowrap">
                {j.node_id
                  ? (
                    <>
                      <a href={`/nodes#node-${j.node_id}`}>{j.node_id}</a>
                      {j.gpu_indices.length
                        ? <span class="muted">{` GPU ${j.gpu_indices.join(",")}`}</span>
                        : ""}
                    </>
                  )
                  : (
                    <span class="muted">
                      {j.gpus === 0 ? "CPU only" : `${j.gpus} GPU${j.gpus === 1 ? "" : "s"}`}
                    </span>
                  )}
              </td>
              <td class="num">
                {j.started_at ? fmtDuration(secondsBetween(j.started_at, j.finished_at, now)) : "–"}
              </td>
              <td>
                <RelTime at={j.created_at} now={now} />
              </td>
              {canWrite && (
                <td class="row-actions">
                  {ACTIVE.has(j.status) && (
                    <ConfirmAction
                      action={`/jobs/${encodeURIComponent(j.id)}/cancel`}
                      label="Cancel"
                      question={`Cancel "${j.name}"?`}
                      yes="Yes, cancel"
                      next={next}
                      danger
                      small
                    />
                  )}
                  {!ACTIVE.has(j.status) && j.status !== "SUCCEEDED" && (
                    <ConfirmAction
                      action={`/jobs/${encodeURIComponent(j.id)}/retry`}
                      label="Retry"
                      question={`Requeue "${j.name}" as attempt ${j.attempt + 1}?`}
                      yes="Yes, retry"
                      next={next}
                      small
                    />
                  )}
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
