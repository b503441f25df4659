// `gpuctl job submit|list|show|cancel|retry`

import type { JobDryRun } from "../../server/jobs/dry_run.ts";
import { printBudget } from "../budget.ts";
import { basename } from "node:path";
import { z } from "zod";
import type { Job, Page } from "../../protocol/objects.ts";
import { ANOMALY_EVENT_TYPES } from "../../protocol/event_types.ts";
import { type JobSubmission, jobSubmission } from "../../protocol/rest/jobs.ts";
import { JOB_STATUSES } from "../../protocol/vocabulary.ts";
import { type CommandContext, EXIT_OK, UsageError } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand, defineGroup, type FlagSpec, type FlagValues } from "../define_command.ts";
import {
  CONNECTION_FLAGS,
  DATA_FLAGS,
  JSON_FLAG,
  LIST_FLAGS,
  optionalInt,
  optionalNumber,
  optionalText,
  pageQuery,
  SCOPE_FILTER_FLAGS,
  textList,
} from "../flags.ts";
import { followJob } from "../follow_logs.ts";
import { ago, clean, identityColumns, printFields, printPage } from "../output.ts";

/** The flags that describe a job submission (shared by `job submit` and `sweep create`). */
export const baseSubmissionFlags = {
  name: {
    short: "n",
    arg: "NAME",
    schema: optionalText(),
    help: "the job's name (default: the program's name)",
  },
  gpus: {
    short: "g",
    arg: "N",
    schema: optionalInt(0, 64),
    help: "GPUs it needs on one node (default 1; 0: CPU only)",
  },
  workingDir: {
    short: "d",
    arg: "DIR",
    schema: optionalText(65_536),
    help: "where it runs, on the agent's host, taken as it is (default: the current folder)",
  },
  watch: { arg: "DIR", schema: optionalText(65_536), help: "a checkpoint folder to watch" },
  tbDir: {
    arg: "DIR",
    schema: optionalText(65_536),
    help: "a TensorBoard log folder to read scalars from (default: the frameworks' own folders, " +
      "runs/, lightning_logs/, logs/, tb_logs/, in the working dir or one folder down)",
  },
  priority: {
    short: "p",
    arg: "N",
    schema: optionalInt(-1_000_000, 1_000_000),
    help: "higher runs first (default 0)",
  },
  project: { arg: "P", schema: optionalText(), help: "its project (default: default)" },
  experiment: { arg: "E", schema: optionalText(), help: "its experiment" },
  node: { arg: "NODE", schema: optionalText(), help: "run only on this node" },
  image: {
    arg: "IMAGE",
    schema: optionalText(65_536),
    help: "run in this Docker image (the docker runner)",
  },
  maxAttempts: {
    arg: "N",
    schema: optionalInt(1, 20),
    help: "attempts in all, retries included (default 3)",
  },
  maxSteps: {
    arg: "N",
    schema: optionalInt(1, Number.MAX_SAFE_INTEGER),
    help: "its last step (progress, ETA)",
  },
  after: { arg: "JOB", schema: textList(64), help: "start only after this job succeeded" },
  env: {
    arg: "K=V",
    schema: z.array(
      z.string().regex(/^[A-Z_][A-Z0-9_]*=/, "must be NAME=VALUE, NAME in [A-Z_][A-Z0-9_]*"),
    ).default([]),
    help: "an environment variable of the job",
  },
  secretEnv: { arg: "NAME", schema: textList(), help: "a variable of --env never shown" },
  grace: {
    arg: "S",
    schema: optionalNumber(0, 3600),
    help: "seconds from SIGTERM to SIGKILL on cancel (default 5)",
  },
  stopOn: {
    arg: "EVENT",
    schema: z.array(z.enum(ANOMALY_EVENT_TYPES, {
      error: (i) => `${JSON.stringify(i.input)} is not one of ${ANOMALY_EVENT_TYPES.join(", ")}`,
    })).default([]),
    help: `cancel it when its run raises this (${ANOMALY_EVENT_TYPES.join(", ")})`,
  },
  shell: { schema: z.boolean().optional(), help: "run the words after -- as one bash -lc line" },
} satisfies Record<string, FlagSpec>;

const submitFlags = {
  ...baseSubmissionFlags,
  follow: {
    short: "f",
    schema: z.boolean().optional(),
    help: "stream its log until it ends, and exit with its exit code",
  },
  dryRun: {
    schema: z.boolean().optional(),
    help: "only check it: validation, budget, where and when it would start; store nothing",
  },
  ...JSON_FLAG,
  ...CONNECTION_FLAGS,
};

/** Where each field of the submission comes from, for messages. */
const FIELD_FLAGS: Record<string, string> = {
  name: "--name",
  command: "the command after --",
  working_dir: "--working-dir",
  gpus: "--gpus",
  priority: "--priority",
  max_attempts: "--max-attempts",
  env: "--env",
  project: "--project",
  experiment: "--experiment",
  tensorboard_dir: "--tb-dir",
  checkpoint_dir: "--watch",
  image: "--image",
  node: "--node",
  after: "--after",
  max_steps: "--max-steps",
  grace_s: "--grace",
  secret_env: "--secret-env",
  stop_on: "--stop-on",
};

/**
 * The job submission the flags and the argv after `--` describe, validated; a UsageError
 * naming the flag otherwise.
 */
export function submissionFromFlags(
  flags: FlagValues<typeof baseSubmissionFlags>,
  rest: string[],
  ctx: Pick<CommandContext, "cwd">,
): JobSubmission {
  if (rest.length === 0) {
    throw new UsageError("the command is required: put it after --, e.g. -- python train.py");
  }
  const env: Record<string, string> = {};
  for (const kv of flags.env) {
    const at = kv.indexOf("=");
    env[kv.slice(0, at)] = kv.slice(at + 1);
  }
  const body = {
    name: flags.name ?? basename(rest[0]),
    command: flags.shell ? rest.join(" ") : rest,
    ...(flags.shell ? { shell: true } : {}),
    working_dir: flags.workingDir ?? ctx.cwd ?? Deno.cwd(),
    gpus: flags.gpus ?? 1,
    priority: flags.priority,
    max_attempts: flags.maxAttempts,
    env: flags.env.length ? env : undefined,
    secret_env: flags.secretEnv.length ? flags.secretEnv : undefined,
    project: flags.project,
    experiment: flags.experiment,
    tensorboard_dir: flags.tbDir,
    checkpoint_dir: flags.watch,
    ...(flags.image ? { runner: "docker" as const, image: flags.image } : {}),
    node: flags.node,
    after: flags.after.length ? flags.after : undefined,
    max_steps: flags.maxSteps,
    grace_s: flags.grace,
    stop_on: flags.stopOn.length ? flags.stopOn : undefined,
  };
  const checked = jobSubmission.safeParse(body);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    const field = String(issue.path[0] ?? "");
    throw new UsageError(`${FIELD_FLAGS[field] ?? field} ${issue.message}`);
  }
  return checked.data;
}

const submit = defineCommand({
  name: "job submit",
  summary: "queue a job: a command to run on GPUs of one node",
  rest: "ARGV…",
  description: `Prints the job's id. The command is an argv, run as it is (no shell) unless
--shell is given; --working-dir is a folder on the agent's host and is sent unchanged.
With --follow the log streams here, across retries, and gpuctl exits with the job's exit
code (a progress bar shows on a terminal when --max-steps is known). --dry-run checks the
submission and the token's budget and says where and when it would start, storing nothing.`,
  examples: [
    "gpuctl job submit -n mnist -g 1 -d ~/mnist --max-steps 1000 -- python train.py --lr 3e-4",
    "gpuctl job submit -g 0 --shell -f -- 'python prep.py && python train.py'",
  ],
  flags: submitFlags,
  async run({ flags, rest }, ctx) {
    const submission = submissionFromFlags(flags, rest, ctx);
    const client = await connect(flags, ctx);
    if (flags.dryRun) {
      const plan = await client.post<JobDryRun>("/api/jobs", { ...submission, dry_run: true });
      if (flags.json) ctx.io.out(JSON.stringify(plan));
      else {
        ctx.io.out(clean(plan.summary));
        printBudget(ctx, plan.budget_after, "budget after");
      }
      return EXIT_OK;
    }
    const job = await client.post<Job>("/api/jobs", submission);
    if (flags.json) ctx.io.out(JSON.stringify(job));
    else ctx.io.out(job.id);
    if (!flags.follow) return EXIT_OK;
    return await followJob(client, ctx, job.id, { json: flags.json });
  },
});

const list = defineCommand({
  name: "job list",
  summary: "jobs, newest first",
  examples: ["gpuctl job list --status RUNNING", "gpuctl job list --project mnist --json"],
  flags: {
    status: {
      arg: "STATUS",
      schema: z.enum(JOB_STATUSES).optional(),
      help: JOB_STATUSES.join(", "),
    },
    ...SCOPE_FILTER_FLAGS,
    node: { arg: "NODE", schema: optionalText(), help: "only those placed on this node" },
    ...LIST_FLAGS,
  },
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const page = await client.get<Page<Job>>("/api/jobs", {
      status: flags.status,
      project: flags.project,
      experiment: flags.experiment,
      node_id: flags.node,
      ...pageQuery(flags),
    });
    const now = ctx.now();
    printPage(
      ctx,
      flags.json,
      page,
      [
        ...identityColumns<Job>(ctx),
        { header: "TRY", cell: (j) => `${j.attempt}/${j.max_attempts}`, right: true },
        { header: "GPUS", cell: (j) => String(j.gpus), right: true },
        { header: "NODE", cell: (j) => clean(j.node_id ?? j.node ?? "") },
        {
          header: "EXIT",
          cell: (j) => j.exit_code === null ? "" : String(j.exit_code),
          right: true,
        },
        { header: "CREATED", cell: (j) => ago(j.created_at, now) },
        { header: "PROJECT", cell: (j) => clean(j.project), flex: true },
      ],
      "No jobs.",
      "gpuctl job list",
    );
    return EXIT_OK;
  },
});

/** The lines of `gpuctl job show`. */
export function jobFields(job: Job, now: number): [string, string][] {
  const command = typeof job.command === "string"
    ? job.command
    : job.command.map((w) => /[\s'"]/.test(w) ? JSON.stringify(w) : w).join(" ");
  return [
    ["id", clean(job.id)],
    ["name", clean(job.name)],
    ["status", clean(job.status) + (job.failure_class ? ` (${clean(job.failure_class)})` : "")],
    ["reason", clean(job.reason)],
    ["exit code", job.exit_code === null ? "" : String(job.exit_code)],
    ["signal", clean(job.signal)],
    ["attempt", `${job.attempt} of ${job.max_attempts}`],
    ["run", clean(job.run_id)],
    ["project", clean(job.project) + (job.experiment ? ` / ${clean(job.experiment)}` : "")],
    ["command", clean(command) + (job.shell ? "  (bash -lc)" : "")],
    ["working dir", clean(job.working_dir)],
    [
      "gpus",
      String(job.gpus) + (job.gpu_indices.length ? ` (indices ${job.gpu_indices.join(",")})` : ""),
    ],
    ["node", clean(job.node_id ?? (job.node ? `only ${job.node}` : ""))],
    ["priority", String(job.priority)],
    ["runner", job.runner + (job.image ? ` ${clean(job.image)}` : "")],
    ["after", clean(job.after.join(", "))],
    ["max steps", job.max_steps === null ? "" : String(job.max_steps)],
    ["stop on", clean(job.stop_on.join(", "))],
    ["env", clean(Object.entries(job.env).map(([k, v]) => `${k}=${v}`).join(" "))],
    ["created", `${job.created_at} (${ago(job.created_at, now)})`],
    ["started", clean(job.started_at)],
    ["finished", clean(job.finished_at)],
  ];
}

const show = defineCommand({
  name: "job show",
  summary: "one job: its command, status, attempt, node and exit code",
  args: ["JOB"],
  examples: ["gpuctl job show j-3f9a2c7d1e0b"],
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const job = await client.get<Job>(`/api/jobs/${encodeURIComponent(args[0])}`);
    if (flags.json) ctx.io.out(JSON.stringify(job));
    else printFields(ctx, jobFields(job, ctx.now()));
    return EXIT_OK;
  },
});

const cancel = defineCommand({
  name: "job cancel",
  summary: "cancel jobs: a queued one ends at once, a running one gets SIGTERM, then SIGKILL",
  args: ["JOB…"],
  examples: ["gpuctl job cancel j-3f9a2c7d1e0b"],
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    for (const id of args) {
      const job = await client.post<Job>(`/api/jobs/${encodeURIComponent(id)}/cancel`);
      if (flags.json) ctx.io.out(JSON.stringify(job));
      else {ctx.io.out(
          `${clean(job.id)}: ${
            job.status === "CANCELLED" ? "cancelled" : `cancelling (${job.status})`
          }`,
        );}
    }
    return EXIT_OK;
  },
});

const retry = defineCommand({
  name: "job retry",
  summary: "queue a finished job again as its next attempt",
  args: ["JOB"],
  examples: ["gpuctl job retry j-3f9a2c7d1e0b"],
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const job = await client.post<Job>(`/api/jobs/${encodeURIComponent(args[0])}/retry`);
    if (flags.json) ctx.io.out(JSON.stringify(job));
    else ctx.io.out(`${clean(job.id)}: queued as attempt ${job.attempt} of ${job.max_attempts}`);
    return EXIT_OK;
  },
});

/** `gpuctl job`. */
export const jobCommand = defineGroup(
  "job",
  "submit, list, inspect, cancel and retry jobs",
  [submit, list, show, cancel, retry],
  "gpuctl job submit -g 1 -- python train.py",
);
