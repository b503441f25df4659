// `gpuctl sweep create|list|show|cancel`

import type { SweepDryRun } from "../../server/sweeps/dry_run.ts";
import { printBudget } from "../budget.ts";
import { z } from "zod";
import type { Page } from "../../protocol/objects.ts";
import { type Sweep, sweepCreate } from "../../protocol/sweeps.ts";
import { SWEEP_STATUSES } from "../../protocol/vocabulary.ts";
import { EXIT_OK, UsageError } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand, defineGroup } from "../define_command.ts";
import {
  CONNECTION_FLAGS,
  DATA_FLAGS,
  JSON_FLAG,
  LIST_FLAGS,
  optionalInt,
  optionalText,
  pageQuery,
} from "../flags.ts";
import { parseSweepParams } from "../sweep_params.ts";
import { ago, clean, metric, paintStatus, printFields, printPage, printTable } from "../output.ts";
import { baseSubmissionFlags, submissionFromFlags } from "./job.ts";

const createFlags = {
  // The base job's flags first: the sweep's own --name (which trials are named after) wins.
  ...baseSubmissionFlags,
  name: {
    short: "n",
    arg: "NAME",
    schema: z.string().min(1).max(200),
    help: "the sweep's name (its trials are named after it)",
  },
  param: {
    arg: "NAME=SPEC",
    schema: z.array(z.string()).min(
      1,
      "is required: name what varies, e.g. --param lr=1e-4:1e-2:log:5",
    ),
    help: "a parameter: MIN:MAX[:linear|log][:COUNT], MIN:MAX:int, or V1,V2,… (repeat for more)",
  },
  method: {
    arg: "M",
    schema: z.enum(["grid", "random"]).optional(),
    help: "grid (every combination, the default) or random",
  },
  runs: { arg: "N", schema: optionalInt(1, 1000), help: "trials of a random sweep (default 10)" },
  seed: { arg: "N", schema: optionalInt(0, 2 ** 31), help: "the random sweep's seed (default 0)" },
  maxParallel: {
    arg: "N",
    schema: optionalInt(1, 1000),
    help: "trials queued or running at once (default all)",
  },
  metric: {
    arg: "KEY",
    schema: optionalText(),
    help: "the metric trials are compared on (default: the project's primary)",
  },
  earlyStop: {
    arg: "MIN:EVERY:KEEP",
    schema: z.string().regex(
      /^\d+:\d+:(0?\.\d+)$/,
      "must be MIN_STEPS:EVERY:KEEP_FRACTION, e.g. 200:200:0.5",
    ).optional(),
    help:
      "successive halving: compare at step MIN, then every EVERY steps, keep the best KEEP share",
  },
  passAs: {
    arg: "HOW",
    schema: z.enum(["args", "env", "both"]).optional(),
    help: "--NAME VALUE arguments (default), GPUCTL_PARAM_NAME variables, or both",
  },
  dryRun: {
    schema: z.boolean().optional(),
    help: "only check it: the trials, the budget, where the first ones would start",
  },
  ...JSON_FLAG,
  ...CONNECTION_FLAGS,
};

const create = defineCommand({
  name: "sweep create",
  summary: "start a sweep: one job per trial over a grid or a random sample",
  rest: "ARGV…",
  description: `Prints the sweep's id. Each trial is an ordinary job made from the command after
--, with its parameters appended as --NAME VALUE (or passed as GPUCTL_PARAM_NAME with
--pass-as env); at most --max-parallel hold GPUs at once; with --early-stop, trials not
among the best at a rung are cancelled.`,
  examples: [
    "gpuctl sweep create -n lr --param lr=1e-4:1e-2:log:5 --param seed=1,2,3 --max-parallel 2 --metric eval/loss -- python train.py",
    "gpuctl sweep create -n lr --method random --runs 8 --param lr=1e-5:1e-1:log --early-stop 200:200:0.5 -- python train.py",
  ],
  flags: createFlags,
  async run({ flags, rest }, ctx) {
    let parameters;
    try {
      parameters = parseSweepParams(flags.param);
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const base = submissionFromFlags(flags, rest, ctx);
    const early = flags.earlyStop?.split(":");
    const body = {
      name: flags.name,
      project: flags.project,
      experiment: flags.experiment,
      base,
      parameters,
      method: flags.method,
      runs: flags.runs,
      seed: flags.seed,
      max_parallel: flags.maxParallel,
      metric: flags.metric,
      early_stop: early
        ? { min_steps: Number(early[0]), every: Number(early[1]), keep_fraction: Number(early[2]) }
        : undefined,
      pass_as: flags.passAs,
    };
    const checked = sweepCreate.safeParse(body);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw new UsageError(`${issue.path.join(".")} ${issue.message}`);
    }
    const client = await connect(flags, ctx);
    if (flags.dryRun) {
      const plan = await client.post<SweepDryRun>("/api/sweeps", {
        ...checked.data,
        dry_run: true,
      });
      if (flags.json) ctx.io.out(JSON.stringify(plan));
      else {
        ctx.io.out(clean(plan.summary));
        for (const t of plan.first_trials) {
          const where = t.starts_now
            ? `now on ${t.node_id} GPUs [${t.gpu_indices!.join(", ")}]`
            : `waits${t.reason ? `: ${t.reason}` : ""}`;
          ctx.io.out(`  #${t.index + 1} ${clean(t.name)}: ${clean(where)}`);
        }
        printBudget(ctx, plan.budget_after, "budget after");
      }
      return EXIT_OK;
    }
    const sweep = await client.post<Sweep>("/api/sweeps", checked.data);
    ctx.io.out(flags.json ? JSON.stringify(sweep) : sweep.id);
    return EXIT_OK;
  },
});

const list = defineCommand({
  name: "sweep list",
  summary: "sweeps, newest first",
  examples: ["gpuctl sweep list", "gpuctl sweep list --status RUNNING --json"],
  flags: {
    status: {
      arg: "STATUS",
      schema: z.enum(SWEEP_STATUSES).optional(),
      help: SWEEP_STATUSES.join(", "),
    },
    project: { arg: "P", schema: optionalText(), help: "only this project's" },
    ...LIST_FLAGS,
  },
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const page = await client.get<Page<Sweep>>("/api/sweeps", {
      status: flags.status,
      project: flags.project,
      ...pageQuery(flags),
    });
    const now = ctx.now();
    printPage(
      ctx,
      flags.json,
      page,
      [
        { header: "ID", cell: (s) => clean(s.id) },
        { header: "NAME", cell: (s) => clean(s.name) },
        { header: "STATUS", cell: (s) => paintStatus(ctx, s.status) },
        { header: "TRIALS", cell: (s) => String(s.trials.length), right: true },
        {
          header: "BEST",
          cell: (s) => s.best ? `${metric(s.best.value)} (#${s.best.index + 1})` : "",
          right: true,
        },
        { header: "METRIC", cell: (s) => clean(s.metric.key) },
        { header: "CREATED", cell: (s) => ago(s.created_at, now), flex: true },
      ],
      "No sweeps. Start one: gpuctl sweep create -n NAME --param lr=1e-4:1e-2:log:5 -- python train.py",
      "gpuctl sweep list",
    );
    return EXIT_OK;
  },
});

const show = defineCommand({
  name: "sweep show",
  summary: "a sweep: its trials by the metric, the best one, what mattered",
  args: ["SWEEP"],
  examples: ["gpuctl sweep show s-3f9a2c7d1e", "gpuctl sweep show s-3f9a2c7d1e --json"],
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const s = await client.get<Sweep>(`/api/sweeps/${encodeURIComponent(args[0])}`);
    if (flags.json) {
      ctx.io.out(JSON.stringify(s));
      return EXIT_OK;
    }
    printFields(ctx, [
      ["id", clean(s.id)],
      ["name", clean(s.name)],
      ["status", paintStatus(ctx, s.status)],
      [
        "metric",
        `${clean(s.metric.key)} (${s.metric.direction === "min" ? "lower" : "higher"} is better)`,
      ],
      [
        "best",
        s.best
          ? `trial ${s.best.index + 1}: ${clean(JSON.stringify(s.best.params))} → ${
            metric(s.best.value)
          }${s.best.step !== null ? ` at step ${s.best.step}` : ""}`
          : "",
      ],
      [
        "importance",
        s.importance.filter((p) => p.correlation !== null).map((p) =>
          `${clean(p.parameter)} ${p.correlation}`
        ).join(", "),
      ],
    ]);
    const min = s.metric.direction === "min";
    const rank = (v: number | null) => v === null ? Infinity : min ? v : -v;
    const trials = [...s.trials].sort((a, b) => rank(a.metric.best) - rank(b.metric.best));
    const names = Object.keys(s.parameters);
    ctx.io.out("");
    printTable(ctx, trials, [
      { header: "#", cell: (t) => String(t.index + 1), right: true },
      ...names.map((n) => ({
        header: n.toUpperCase(),
        cell: (t: Sweep["trials"][number]) => clean(String(t.params[n])),
        right: true,
      })),
      {
        header: "STATUS",
        cell: (t) =>
          paintStatus(ctx, t.status) + (t.stopped_at !== null ? ` @${t.stopped_at}` : ""),
      },
      { header: "BEST", cell: (t) => metric(t.metric.best), right: true },
      {
        header: "STEP",
        cell: (t) => t.metric.step === null ? "" : String(t.metric.step),
        right: true,
      },
      { header: "RUN", cell: (t) => clean(t.run_id ?? ""), flex: true },
    ], "No trials.");
    ctx.io.out("");
    ctx.io.out(clean(s.summary));
    return EXIT_OK;
  },
});

const cancel = defineCommand({
  name: "sweep cancel",
  summary: "cancel a sweep: no more trials start; queued and running ones are cancelled",
  args: ["SWEEP"],
  examples: [
    "gpuctl sweep cancel s-3f9a2c7d1e",
    "gpuctl sweep cancel s-3f9a2c7d1e --let-running-finish",
  ],
  flags: {
    letRunningFinish: {
      schema: z.boolean().optional(),
      help: "let trials that are running finish",
    },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const s = await client.post<Sweep>(`/api/sweeps/${encodeURIComponent(args[0])}/cancel`, {
      let_running_finish: flags.letRunningFinish ?? false,
    });
    ctx.io.out(flags.json ? JSON.stringify(s) : `${clean(s.id)}: ${s.status}`);
    return EXIT_OK;
  },
});

/** `gpuctl sweep`. */
export const sweepCommand = defineGroup(
  "sweep",
  "start, watch and cancel hyperparameter sweeps",
  [create, list, show, cancel],
  "gpuctl sweep create -n lr --param lr=1e-4:1e-2:log:5 -- python train.py",
);
