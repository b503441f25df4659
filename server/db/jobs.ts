/**
 * Job records: inserted, patched (optionally compare-and-set on status), listed and read by
 * state, and `publicJob`, the job as the API shows it with its secrets masked.
 */
import type { ForkOverrides, Job } from "../../protocol/objects.ts";
import type { JobStatus } from "../../protocol/vocabulary.ts";
import {
  maskSecretArgv,
  maskSecretCommandLine,
  maskSecretEnv,
  secretValues,
} from "../../protocol/secret_env.ts";
import type { Database } from "./database.ts";
import { json, pageOf, where } from "./_rows.ts";

interface JobRow {
  seq: number;
  id: string;
  name: string;
  project: string;
  experiment: string | null;
  kind: Job["kind"];
  command: string;
  shell: number;
  working_dir: string;
  env: string;
  secret_env: string;
  gpus: number;
  node_constraint: string | null;
  priority: number;
  max_attempts: number;
  attempt: number;
  infra_attempts: number;
  status: JobStatus;
  failure_class: Job["failure_class"];
  reason: string | null;
  node_id: string | null;
  gpu_indices: string;
  runner: Job["runner"];
  image: string | null;
  tensorboard_dir: string | null;
  checkpoint_dir: string | null;
  after: string;
  max_steps: number | null;
  grace_s: number | null;
  stop_on: string;
  config: string;
  on_node_lost: Job["on_node_lost"];
  not_before: string | null;
  run_id: string | null;
  exit_code: number | null;
  signal: string | null;
  cancel_requested: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  parent_run_id: string | null;
  resume_from: string | null;
  resume_from_path: string | null;
  fork_overrides: string | null;
  submitted_by: string | null;
}

/** A job with the fields only the server uses. */
export interface JobState extends Job {
  seq: number;
  infra_attempts: number;
  cancel_requested: boolean;
  /** The token id that submitted it (its budget counts the job); null: none recorded. */
  submitted_by: string | null;
}

function toJob(r: JobRow): JobState {
  return {
    seq: r.seq,
    id: r.id,
    name: r.name,
    kind: r.kind,
    project: r.project,
    experiment: r.experiment,
    command: json(r.command, [] as string[]),
    shell: r.shell === 1,
    working_dir: r.working_dir,
    env: json(r.env, {}),
    secret_env: json(r.secret_env, [] as string[]),
    gpus: r.gpus,
    priority: r.priority,
    max_attempts: r.max_attempts,
    node: r.node_constraint,
    tensorboard_dir: r.tensorboard_dir,
    checkpoint_dir: r.checkpoint_dir,
    runner: r.runner,
    image: r.image,
    after: json(r.after, []),
    max_steps: r.max_steps,
    grace_s: r.grace_s,
    stop_on: json(r.stop_on, []),
    config: json(r.config, {}),
    on_node_lost: r.on_node_lost,
    not_before: r.not_before,
    status: r.status,
    attempt: r.attempt,
    infra_attempts: r.infra_attempts,
    failure_class: r.failure_class,
    reason: r.reason,
    exit_code: r.exit_code,
    signal: r.signal,
    node_id: r.node_id,
    gpu_indices: json(r.gpu_indices, []),
    run_id: r.run_id,
    cancel_requested: r.cancel_requested === 1,
    created_at: r.created_at,
    started_at: r.started_at,
    finished_at: r.finished_at,
    parent_run: r.parent_run_id,
    resume_from: r.resume_from && r.resume_from_path !== null
      ? { checkpoint_id: r.resume_from, path: r.resume_from_path }
      : null,
    fork_overrides: r.fork_overrides ? json<ForkOverrides>(r.fork_overrides, {}) : null,
    submitted_by: r.submitted_by ?? null,
  };
}

/**
 * What the API shows of a job: the server-only fields removed, secret env values masked, and
 * in its command the values of secret-named flags (`--hf-token X`) and of its secret variables.
 */
export function publicJob(j: JobState): Job {
  const { seq: _s, infra_attempts: _i, cancel_requested: _c, submitted_by: _b, ...job } = j;
  const values = secretValues(job.env, job.secret_env);
  return {
    ...job,
    env: maskSecretEnv(job.env, job.secret_env),
    command: typeof job.command === "string"
      ? maskSecretCommandLine(job.command, values)
      : maskSecretArgv(job.command, values),
  };
}

export type NewJob = Omit<
  Job,
  | "status"
  | "attempt"
  | "failure_class"
  | "reason"
  | "exit_code"
  | "signal"
  | "node_id"
  | "gpu_indices"
  | "run_id"
  | "started_at"
  | "finished_at"
  | "stop_on"
  | "not_before"
  | "config"
  | "parent_run"
  | "resume_from"
  | "fork_overrides"
>;

export function insertJob(db: Database, j: NewJob): void {
  db.prepare(
    `INSERT INTO jobs (id, name, project, experiment, kind, command, shell, working_dir, env, gpus,
       node_constraint, priority, max_attempts, status, runner, image, tensorboard_dir,
       checkpoint_dir, after, max_steps, grace_s, on_node_lost, created_at, updated_at, secret_env)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'QUEUED', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    j.id,
    j.name,
    j.project,
    j.experiment,
    j.kind,
    JSON.stringify(j.command),
    j.shell ? 1 : 0,
    j.working_dir,
    JSON.stringify(j.env),
    j.gpus,
    j.node,
    j.priority,
    j.max_attempts,
    j.runner,
    j.image,
    j.tensorboard_dir,
    j.checkpoint_dir,
    JSON.stringify(j.after),
    j.max_steps,
    j.grace_s,
    j.on_node_lost,
    j.created_at,
    j.created_at,
    JSON.stringify(j.secret_env),
  );
}

/** The config every run of the job records (set once, at submission, like `stop_on`). */
export function setConfig(db: Database, id: string, config: Record<string, unknown>): void {
  db.prepare("UPDATE jobs SET config = ? WHERE id = ?").run(JSON.stringify(config), id);
}

/**
 * The run a job continues or varies, the checkpoint it starts from, and what a fork changed
 * (set once, at submission).
 */
export function setLineage(
  db: Database,
  id: string,
  l: Pick<Job, "parent_run" | "resume_from" | "fork_overrides">,
): void {
  db.prepare(
    `UPDATE jobs SET parent_run_id = ?, resume_from = ?, resume_from_path = ?, fork_overrides = ?
     WHERE id = ?`,
  ).run(
    l.parent_run,
    l.resume_from?.checkpoint_id ?? null,
    l.resume_from?.path ?? null,
    l.fork_overrides ? JSON.stringify(l.fork_overrides) : null,
    id,
  );
}

/** The anomaly event types that stop a job (kept apart from the insert: set once, at submission). */
export function setStopOn(db: Database, id: string, types: string[]): void {
  db.prepare("UPDATE jobs SET stop_on = ? WHERE id = ?").run(JSON.stringify(types), id);
}

export function getJob(db: Database, id: string): JobState | null {
  const row = db.prepare("SELECT * FROM jobs WHERE id = ?").get(id) as JobRow | undefined;
  return row ? toJob(row) : null;
}

export interface JobFilter {
  status?: JobStatus;
  project?: string;
  experiment?: string;
  node_id?: string;
}

export function listJobs(db: Database, filter: JobFilter, limit: number, cursor?: number) {
  const w = where({ ...filter }, cursor);
  const rows = db.prepare(`SELECT * FROM jobs ${w.sql} ORDER BY seq DESC LIMIT ?`).all(
    ...w.params,
    limit + 1,
  ) as unknown as JobRow[];
  return pageOf(rows, limit, (r) => publicJob(toJob(r)));
}

/** Jobs in the given states, oldest first (the scheduler's and the gateway's view). */
export function jobsInStatus(db: Database, statuses: JobStatus[]): JobState[] {
  const marks = statuses.map(() => "?").join(", ");
  const rows = db.prepare(`SELECT * FROM jobs WHERE status IN (${marks}) ORDER BY seq`).all(
    ...statuses,
  ) as unknown as JobRow[];
  return rows.map(toJob);
}

const UPDATABLE = new Set([
  "status",
  "attempt",
  "infra_attempts",
  "failure_class",
  "reason",
  "node_id",
  "gpu_indices",
  "run_id",
  "exit_code",
  "signal",
  "cancel_requested",
  "started_at",
  "finished_at",
  "not_before",
]);

export type JobPatch = Partial<
  Pick<
    JobState,
    | "status"
    | "attempt"
    | "infra_attempts"
    | "failure_class"
    | "reason"
    | "node_id"
    | "gpu_indices"
    | "run_id"
    | "exit_code"
    | "signal"
    | "cancel_requested"
    | "started_at"
    | "finished_at"
    | "not_before"
  >
>;

/** Applies a patch; `expectStatus` makes it a compare-and-set on the current status. */
export function updateJob(
  db: Database,
  id: string,
  patch: JobPatch,
  at: string,
  expectStatus?: JobStatus[],
): boolean {
  const sets: string[] = [];
  const params: (string | number | null)[] = [];
  for (const [k, v] of Object.entries(patch)) {
    if (!UPDATABLE.has(k) || v === undefined) continue;
    sets.push(`${k} = ?`);
    params.push(
      Array.isArray(v) ? JSON.stringify(v) : typeof v === "boolean" ? (v ? 1 : 0) : v,
    );
  }
  sets.push("updated_at = ?");
  params.push(at, id);
  let sql = `UPDATE jobs SET ${sets.join(", ")} WHERE id = ?`;
  if (expectStatus?.length) {
    sql += ` AND status IN (${expectStatus.map(() => "?").join(", ")})`;
    params.push(...expectStatus);
  }
  return Number(db.prepare(sql).run(...params).changes) > 0;
}
