/**
 * Sweeps: one request that becomes a family of trial jobs over a grid or a random sample
 * of parameters, with successive-halving early stopping. The request schema and the
 * answer's shape, shared by the REST API, the CLI, the MCP tools and the console.
 */
import { z } from "zod";
import { MAX_NAME_LENGTH, pageQuery } from "./rest/fields.ts";
import { jobSubmission } from "./rest/jobs.ts";
import { metricKey } from "./rest/sdk.ts";
import { dryRunField } from "./budgets.ts";
import {
  type JobStatus,
  type MetricDirection,
  SWEEP_STATUSES,
  type SweepStatus,
} from "./vocabulary.ts";

/** Trials one sweep may have. */
export const MAX_TRIALS = 1000;

/** A parameter's name: what `--NAME` and `GPUCTL_PARAM_NAME` are made of. */
export const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

const finite = z.number().refine(Number.isFinite, "must be a finite number");

const values = z.strictObject({
  values: z.array(z.union([finite, z.string().max(MAX_NAME_LENGTH), z.boolean()]))
    .min(1, "must list at least one value").max(MAX_TRIALS),
});
const range = z.strictObject({
  min: finite,
  max: finite,
  scale: z.enum(["linear", "log"]).optional(),
  /** Points of the range a grid takes (ends included); random sampling ignores it. */
  count: z.number().int().min(1).max(MAX_TRIALS).optional(),
});
const distribution = z.strictObject({
  distribution: z.enum(["uniform", "log_uniform", "int"]),
  min: finite,
  max: finite,
});

/** One parameter: listed values, a range (grid points or sampled), or a distribution. */
export const sweepParameter = z.union([values, range, distribution]).superRefine((p, ctx) => {
  if ("values" in p) return;
  if (p.min > p.max) {
    ctx.addIssue({ code: "custom", path: ["min"], message: `is above max (${p.max})` });
  }
  const log = ("scale" in p && p.scale === "log") ||
    ("distribution" in p && p.distribution === "log_uniform");
  if (log && p.min <= 0) {
    ctx.addIssue({ code: "custom", path: ["min"], message: "must be above 0 on a log scale" });
  }
});
export type SweepParameter = z.infer<typeof sweepParameter>;

export const earlyStop = z.strictObject({
  /** The first rung: trials are first compared at this step. */
  min_steps: z.number().int().min(1),
  /** Later rungs come every this many steps. */
  every: z.number().int().min(1),
  /** The share of trials kept at each rung (the best ones on the sweep's metric). */
  keep_fraction: z.number().gt(0).lt(1),
});
export type EarlyStop = z.infer<typeof earlyStop>;

/** `POST /api/sweeps`. */
export const sweepCreate = z.strictObject({
  name: z.string().trim().min(1, "must not be empty").max(MAX_NAME_LENGTH)
    .describe("The sweep's name; trials are named after it (`NAME #3 lr=0.01`)"),
  project: z.string().trim().min(1).max(MAX_NAME_LENGTH).optional()
    .describe("Project of every trial (default: the base's, else `default`)"),
  experiment: z.string().trim().min(1).max(MAX_NAME_LENGTH).optional()
    .describe("Experiment of every trial (default: the base's)"),
  /** The job every trial is made from (its project and experiment are the sweep's). */
  base: jobSubmission.describe(
    "The job submission every trial is made from (as submit_job takes it); each trial " +
      "appends its parameters to the command",
  ),
  parameters: z.record(
    z.string().regex(PARAM_NAME, "parameter names must match [A-Za-z_][A-Za-z0-9_.-]*"),
    sweepParameter,
  ).refine((p) => Object.keys(p).length > 0, "must name at least one parameter").describe(
    'Per parameter: {values: [..]}, {min, max, scale: "linear"|"log", count} (a grid ' +
      'takes count points, ends included) or {distribution: "uniform"|"log_uniform"|"int", ' +
      "min, max} (random only, except int)",
  ),
  method: z.enum(["grid", "random"]).optional()
    .describe('"grid" (every combination, the default) or "random" (`runs` seeded samples)'),
  /** Trials of a random sweep. @default 10 */
  runs: z.number().int().min(1).max(MAX_TRIALS).optional()
    .describe("Trials of a random sweep (default 10); caps a grid"),
  seed: z.number().int().min(0).max(2 ** 31).optional()
    .describe("Seed of a random sweep's sampling (default 0): the same seed, the same trials"),
  /** Trials queued or running at once. @default every trial */
  max_parallel: z.number().int().min(1).max(MAX_TRIALS).optional()
    .describe("Trials queued or running at once (default: all)"),
  /** The key trials are compared on. @default the project's primary metric */
  metric: metricKey.optional()
    .describe("The metric key trials are compared on (default: the project's primary metric)"),
  early_stop: earlyStop.optional().describe(
    "Successive halving: at step min_steps and every `every` steps after, running trials " +
      "not among the best keep_fraction are cancelled",
  ),
  /** How a trial gets its parameters. @default "args" (`--NAME VALUE` appended) */
  pass_as: z.enum(["args", "env", "both"]).optional().describe(
    '"args": --NAME VALUE appended to the command (default); "env": GPUCTL_PARAM_NAME ' +
      'variables; "both"',
  ),
});
export type SweepCreate = z.infer<typeof sweepCreate>;

/** `POST /api/sweeps` and `create_sweep`: a sweep, or with `dry_run` only its check. */
export const sweepCreateRequest = sweepCreate.extend({ dry_run: dryRunField });

/** `GET /api/sweeps`: newest first. */
export const sweepListQuery = pageQuery.extend({
  status: z.enum(SWEEP_STATUSES).optional(),
  project: z.string().max(MAX_NAME_LENGTH).optional(),
});

/** `POST /api/sweeps/{id}/cancel`: running trials are cancelled too unless told to finish. */
export const sweepCancel = z.strictObject({ let_running_finish: z.boolean().optional() });

/** A parameter value as a trial gets it. */
export type ParamValue = number | string | boolean;

/** A trial's state: PENDING until its job is submitted, then its job's status or STOPPED. */
export type TrialStatus = "PENDING" | JobStatus | "STOPPED";

export interface SweepTrial {
  index: number;
  params: Record<string, ParamValue>;
  job_id: string | null;
  run_id: string | null;
  status: TrialStatus;
  /** The sweep's metric on this trial: its latest value, its best and the step of the best. */
  metric: {
    latest: number | null;
    best: number | null;
    best_step: number | null;
    step: number | null;
  };
  /** The rung (a step) at which early stopping cancelled it, and why. */
  stopped_at: number | null;
  stop_reason: string | null;
}

/** How much each parameter seems to matter: its rank correlation with the final metric. */
export interface ParameterImportance {
  parameter: string;
  /** Spearman's rank correlation of the value with the metric, -1 … 1 (null: too few trials). */
  correlation: number | null;
  trials: number;
}

/** The answer of `GET /api/sweeps/{id}`. */
export interface Sweep {
  id: string;
  name: string;
  project: string;
  experiment: string | null;
  status: SweepStatus;
  method: "grid" | "random";
  metric: { key: string; direction: MetricDirection };
  parameters: Record<string, SweepParameter>;
  max_parallel: number;
  early_stop: EarlyStop | null;
  pass_as: "args" | "env" | "both";
  counts: Partial<Record<TrialStatus, number>>;
  trials: SweepTrial[];
  /** The best trial so far on the metric (its best value over its steps). */
  best: {
    index: number;
    params: Record<string, ParamValue>;
    run_id: string | null;
    value: number;
    step: number | null;
  } | null;
  importance: ParameterImportance[];
  summary: string;
  next_actions: { tool: string; args: Record<string, unknown>; why: string }[];
  created_at: string;
  finished_at: string | null;
}
