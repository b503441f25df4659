// `gpuctl project create|list`, `gpuctl experiment create|list`, `gpuctl metric set-primary`

import { z } from "zod";
import type {
  Experiment,
  ExperimentSummary,
  MetricDefinition,
  Page,
  Project,
  ProjectSummary,
} from "../../protocol/objects.ts";
import type { ScopeActivity } from "../../protocol/objects.ts";
import { METRIC_DIRECTIONS, wordList } from "../../protocol/vocabulary.ts";
import { EXIT_OK, UsageError } from "../command.ts";
import { connect } from "../config.ts";
import { type Column } from "../output.ts";
import { defineCommand, defineGroup } from "../define_command.ts";
import { DATA_FLAGS, optionalText, requiredText } from "../flags.ts";
import { ago, clean, metric, printPage } from "../output.ts";

/** The columns a project and an experiment list share: runs, best primary, activity. */
function activityColumns<T extends ScopeActivity>(now: number): Column<T>[] {
  return [
    { header: "RUNS", cell: (s) => String(s.runs.total), right: true },
    {
      header: "BEST",
      cell: (s) =>
        s.best_primary
          ? `${clean(s.best_primary.key)} ${metric(s.best_primary.value)}` +
            (s.best_primary.run_id ? ` (${clean(s.best_primary.run_id)})` : "")
          : "",
      flex: true,
    },
    { header: "ACTIVE", cell: (s) => ago(s.last_activity_at, now) },
  ];
}

const describe = { arg: "TEXT", schema: optionalText(65_536), help: "what it is for" };
const primary = { arg: "KEY", schema: optionalText(), help: "its primary metric" };

const projectCreate = defineCommand({
  name: "project create",
  summary: "create a project (again: the same project)",
  args: ["NAME"],
  examples: ["gpuctl project create mnist --primary-metric val/acc"],
  flags: {
    description: describe,
    primaryMetric: primary,
    evalCommand: {
      arg: "CMD",
      schema: optionalText(65_536),
      help: "how its checkpoints are evaluated",
    },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const p = await client.post<Project>("/api/projects", {
      name: args[0],
      description: flags.description,
      primary_metric: flags.primaryMetric,
      eval_command: flags.evalCommand,
    });
    if (flags.json) ctx.io.out(JSON.stringify(p));
    else ctx.io.out(`Project ${clean(p.name)}`);
    return EXIT_OK;
  },
});

const projectList = defineCommand({
  name: "project list",
  summary: "projects with their runs, best primary metric and last activity",
  examples: ["gpuctl project list"],
  flags: DATA_FLAGS,
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const page = await client.get<Page<ProjectSummary>>("/api/projects");
    printPage(ctx, flags.json, page, [
      { header: "PROJECT", cell: (p) => clean(p.name), flex: true },
      ...activityColumns<ProjectSummary>(ctx.now()),
      { header: "DESCRIPTION", cell: (p) => clean(p.description), flex: true },
    ], "No projects.");
    return EXIT_OK;
  },
});

/** `gpuctl project`. */
export const projectCommand = defineGroup(
  "project",
  "create and list projects",
  [projectCreate, projectList],
  "gpuctl project create mnist",
);

const experimentCreate = defineCommand({
  name: "experiment create",
  summary: "create an experiment of a project (again: the same experiment)",
  args: ["NAME"],
  examples: ["gpuctl experiment create lr-sweep --project mnist"],
  flags: {
    project: { arg: "P", schema: requiredText(), help: "its project (required)" },
    description: describe,
    primaryMetric: primary,
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const e = await client.post<Experiment>("/api/experiments", {
      project: flags.project,
      name: args[0],
      description: flags.description,
      primary_metric: flags.primaryMetric,
    });
    if (flags.json) ctx.io.out(JSON.stringify(e));
    else ctx.io.out(`Experiment ${clean(e.project)}/${clean(e.name)} (${clean(e.id)})`);
    return EXIT_OK;
  },
});

const experimentList = defineCommand({
  name: "experiment list",
  summary: "experiments with their runs, best primary metric and last activity",
  examples: ["gpuctl experiment list --project mnist"],
  flags: {
    project: { arg: "P", schema: optionalText(), help: "only this project's" },
    ...DATA_FLAGS,
  },
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const page = await client.get<Page<ExperimentSummary>>("/api/experiments", {
      project: flags.project,
    });
    printPage(ctx, flags.json, page, [
      { header: "EXPERIMENT", cell: (e) => `${clean(e.project)}/${clean(e.name)}`, flex: true },
      ...activityColumns<ExperimentSummary>(ctx.now()),
      { header: "DESCRIPTION", cell: (e) => clean(e.description), flex: true },
    ], "No experiments.");
    return EXIT_OK;
  },
});

/** `gpuctl experiment`. */
export const experimentCommand = defineGroup(
  "experiment",
  "create and list experiments",
  [experimentCreate, experimentList],
  "gpuctl experiment create lr-sweep --project mnist",
);

const setPrimary = defineCommand({
  name: "metric set-primary",
  summary: "make a metric the primary one of a project, an experiment, or everything",
  args: ["KEY"],
  description: `Runs are ranked and checkpoints recommended by their primary metric. Without
--direction, the key's known direction (its definitions, then its name) is kept.`,
  examples: [
    "gpuctl metric set-primary val/acc --project mnist --direction max",
    "gpuctl metric set-primary val/loss --experiment mnist/lr-sweep",
  ],
  flags: {
    project: { arg: "P", schema: optionalText(), help: "for this project" },
    experiment: {
      arg: "P/E",
      schema: optionalText(401),
      help: "for this experiment (project/experiment)",
    },
    global: { schema: z.boolean().optional(), help: "for every run without a narrower one" },
    direction: {
      arg: "DIR",
      schema: z.enum(METRIC_DIRECTIONS).optional(),
      help: `${wordList(METRIC_DIRECTIONS)}: which way is better`,
    },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const scopes = [flags.project, flags.experiment, flags.global || undefined].filter((s) =>
      s !== undefined
    );
    if (scopes.length !== 1) {
      throw new UsageError("give exactly one of --project P, --experiment P/E or --global");
    }
    if (flags.experiment !== undefined && !/^[^/]+\/.+$/.test(flags.experiment)) {
      throw new UsageError(`--experiment must be PROJECT/EXPERIMENT, got "${flags.experiment}"`);
    }
    const [scope, scopeId] = flags.project !== undefined
      ? ["project", flags.project]
      : flags.experiment !== undefined
      ? ["experiment", flags.experiment]
      : ["global", undefined];
    const client = await connect(flags, ctx);
    const d = await client.put<MetricDefinition>("/api/metric-definitions/primary", {
      scope,
      scope_id: scopeId,
      key: args[0],
      direction: flags.direction,
    });
    if (flags.json) ctx.io.out(JSON.stringify(d));
    else {
      ctx.io.out(
        `Primary metric of ${
          d.scope === "global" ? "everything" : `${d.scope} ${clean(d.scope_id)}`
        }: ` +
          `${clean(d.key)} (${d.direction === "min" ? "lower" : "higher"} is better)`,
      );
    }
    return EXIT_OK;
  },
});

/** `gpuctl metric`. */
export const metricCommand = defineGroup(
  "metric",
  "set which metric ranks runs",
  [setPrimary],
  "gpuctl metric set-primary val/acc --project mnist",
);
