// `gpuctl run list|show|compare|wait` and the lineage commands

import { z } from "zod";
import type { MetricRow, Page, Run, RunComparison, RunDiagnosis } from "../../protocol/objects.ts";
import { RUN_SOURCES, RUN_STATUSES, wordList } from "../../protocol/vocabulary.ts";
import type { GpuctlClient } from "../client.ts";
import { EXIT_OK, UsageError } from "../command.ts";
import type { RunQueryResult } from "../../protocol/run_query.ts";
import { connect } from "../config.ts";
import { defineCommand, defineGroup } from "../define_command.ts";
import type { RunCodeAndNotes } from "../../protocol/lineage.ts";
import { codeFields, runLineageCommands } from "./run_lineage.ts";
import { waitCommand } from "./run_wait.ts";
import { DATA_FLAGS, LIST_FLAGS, optionalText, pageQuery, SCOPE_FILTER_FLAGS } from "../flags.ts";
import {
  ago,
  clean,
  identityColumns,
  metric,
  paint,
  paintStatus,
  printFields,
  printPage,
  printTable,
} from "../output.ts";

const list = defineCommand({
  name: "run list",
  summary: "runs, newest first, with their primary metric",
  examples: ["gpuctl run list --project mnist --status SUCCEEDED", "gpuctl run list -q lr3e-4"],
  flags: {
    ...SCOPE_FILTER_FLAGS,
    status: {
      arg: "STATUS",
      schema: z.enum(RUN_STATUSES).optional(),
      help: RUN_STATUSES.join(", "),
    },
    job: { arg: "JOB", schema: optionalText(), help: "only this job's attempts" },
    source: {
      arg: "SRC",
      schema: z.enum(RUN_SOURCES).optional(),
      help: wordList(RUN_SOURCES),
    },
    search: {
      short: "q",
      arg: "TEXT",
      schema: optionalText(),
      help: "names and ids containing TEXT",
    },
    where: {
      arg: "JSON",
      schema: optionalText(20_000),
      help: 'a query_runs filter: \'{"config": {"lr": {"lt": 0.01}}, "mark": "kept"}\'',
    },
    orderBy: {
      arg: "FIELD",
      schema: optionalText(),
      help: "with --where: metric.KEY.best, config.KEY, created_at (- in front: descending)",
    },
    ...LIST_FLAGS,
  },
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const page = flags.where !== undefined || flags.orderBy !== undefined
      ? await queried(client, flags)
      : await client.get<Page<Run>>("/api/runs", {
        project: flags.project,
        experiment: flags.experiment,
        status: flags.status,
        job_id: flags.job,
        source: flags.source,
        q: flags.search,
        ...pageQuery(flags),
      });
    const now = ctx.now();
    printPage(
      ctx,
      flags.json,
      page,
      [
        ...identityColumns<Run>(ctx),
        {
          header: "PROJECT",
          cell: (r) => clean(r.project + (r.experiment ? `/${r.experiment}` : "")),
          flex: true,
        },
        { header: "STEP", cell: (r) => stepOf(r), right: true },
        {
          header: "PRIMARY",
          cell: (r) =>
            r.primary_metric
              ? `${clean(r.primary_metric.key)} ${
                metric(r.primary_metric.best ?? r.primary_metric.latest)
              }`
              : "",
          flex: true,
        },
        { header: "CREATED", cell: (r) => ago(r.created_at, now) },
      ],
      "No runs.",
      "gpuctl run list",
    );
    return EXIT_OK;
  },
});

/** `run list --where`: `POST /api/runs:query`, with the filter flags added to `where`. */
async function queried(
  client: GpuctlClient,
  flags: {
    where?: string;
    orderBy?: string;
    project?: string;
    experiment?: string;
    status?: string;
    limit?: number;
  },
): Promise<Page<Run>> {
  let where: Record<string, unknown> = {};
  if (flags.where !== undefined) {
    try {
      where = JSON.parse(flags.where);
    } catch (err) {
      throw new UsageError(`--where is not JSON: ${(err as Error).message}`);
    }
    if (where === null || typeof where !== "object" || Array.isArray(where)) {
      throw new UsageError('--where must be a JSON object, e.g. \'{"mark": "kept"}\'');
    }
  }
  for (const k of ["project", "experiment", "status"] as const) {
    if (flags[k] !== undefined) where[k] = flags[k];
  }
  const answer = await client.post<RunQueryResult>("/api/runs:query", {
    where,
    ...(flags.orderBy ? { order_by: flags.orderBy } : {}),
    ...(flags.limit ? { limit: flags.limit } : {}),
  });
  return { items: answer.items, next_cursor: null };
}

function stepOf(r: Pick<Run, "step" | "max_steps">): string {
  if (r.step === null) return "";
  return r.max_steps ? `${r.step}/${r.max_steps}` : String(r.step);
}

/** Each metric of a run (system metrics last) with its latest, best and trend. */
async function metricRows(client: GpuctlClient, run: Run): Promise<MetricRow[]> {
  const id = encodeURIComponent(run.id);
  return (await client.get<{ items: MetricRow[] }>(`/api/runs/${id}/metric-summary`)).items;
}

const TREND_COLOURS = {
  improving: "green",
  worsening: "red",
  flat: "dim",
  unknown: "dim",
} as const;

const show = defineCommand({
  name: "run show",
  summary: "one run: status, progress, config, and each metric's latest, best and trend",
  args: ["RUN"],
  examples: [
    "gpuctl run show r-8c1d0e2f3a4b",
    "gpuctl run show r-8c1d0e2f3a4b --json | jq .metrics",
  ],
  description: `With --json: {run, diagnosis, metrics}, the first two as the API gives them.`,
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const id = encodeURIComponent(args[0]);
    const run = await client.get<Run & Partial<RunCodeAndNotes>>(`/api/runs/${id}`);
    const [diagnosis, metrics] = await Promise.all([
      client.get<RunDiagnosis>(`/api/runs/${id}/diagnosis`),
      metricRows(client, run),
    ]);
    if (flags.json) {
      ctx.io.out(JSON.stringify({ run, diagnosis, metrics }));
      return EXIT_OK;
    }
    const now = ctx.now();
    const config = Object.entries(run.config).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
    printFields(ctx, [
      ["id", clean(run.id)],
      ["name", clean(run.name)],
      ["status", paintStatus(ctx, run.status)],
      ["project", clean(run.project) + (run.experiment ? ` / ${clean(run.experiment)}` : "")],
      [
        "source",
        run.source + (run.job_id ? ` (job ${clean(run.job_id)}, attempt ${run.attempt})` : ""),
      ],
      ["node", clean(run.node_id)],
      ["step", stepOf(run)],
      ["eta", diagnosis.eta ? `${Math.round(diagnosis.eta.seconds)}s (${diagnosis.eta.at})` : ""],
      ["created", `${run.created_at} (${ago(run.created_at, now)})`],
      ["finished", clean(run.finished_at)],
      ["config", clean(config.join(" "))],
      ["parent", clean(run.parent_run ?? "")],
      ["mark", clean(run.mark ? `${run.mark.mark}: ${run.mark.reason}` : "")],
      ...codeFields(run.code ?? null),
      ["summary", clean(diagnosis.summary)],
    ]);
    for (const n of run.notes ?? []) {
      ctx.io.out(`note ${clean(n.created_at)} ${clean(n.author)}: ${clean(n.text)}`);
    }
    ctx.io.out("");
    printTable(ctx, metrics, [
      { header: "METRIC", cell: (m) => clean(m.key), flex: true },
      { header: "LATEST", cell: (m) => metric(m.latest), right: true },
      { header: "AT STEP", cell: (m) => String(m.latest_step), right: true },
      { header: "BEST", cell: (m) => metric(m.best), right: true },
      {
        header: "AT STEP",
        cell: (m) => m.best_step === null ? "" : String(m.best_step),
        right: true,
      },
      { header: "GOAL", cell: (m) => m.direction ?? "" },
      { header: "TREND", cell: (m) => paint(ctx, TREND_COLOURS[m.trend], m.trend) },
      { header: "POINTS", cell: (m) => String(m.points), right: true },
    ], "No metrics yet.");
    return EXIT_OK;
  },
});

const compare = defineCommand({
  name: "run compare",
  summary: "rank runs on one metric and show how their configs differ",
  args: ["RUN", "RUN…"],
  examples: ["gpuctl run compare r-1 r-2 r-3 --metric val/loss"],
  flags: {
    metric: {
      arg: "KEY",
      schema: optionalText(),
      help: "the metric (default: their primary metric)",
    },
    ...DATA_FLAGS,
  },
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    const c = await client.get<RunComparison>("/api/runs/compare", {
      runs: args.join(","),
      metric: flags.metric,
    });
    if (flags.json) {
      ctx.io.out(JSON.stringify(c));
      return EXIT_OK;
    }
    ctx.io.out(clean(c.summary));
    ctx.io.out("");
    const ranked = [...c.runs].sort((a, b) => (a.rank ?? Infinity) - (b.rank ?? Infinity));
    printTable(ctx, ranked, [
      { header: "RANK", cell: (r) => r.rank === null ? "-" : String(r.rank), right: true },
      { header: "RUN", cell: (r) => clean(r.run_id) },
      { header: "NAME", cell: (r) => clean(r.name), flex: true },
      { header: "STATUS", cell: (r) => paintStatus(ctx, r.status) },
      {
        header: c.metric ? `BEST ${clean(c.metric.key)} (${c.metric.direction})` : "BEST",
        cell: (r) => metric(r.best),
        right: true,
      },
      {
        header: "AT STEP",
        cell: (r) => r.best_step === null ? "" : String(r.best_step),
        right: true,
      },
      { header: "LATEST", cell: (r) => metric(r.latest), right: true },
      { header: "STEPS", cell: (r) => r.steps === null ? "" : String(r.steps), right: true },
    ], "");
    if (c.config_diff.length) {
      ctx.io.out("");
      ctx.io.out(`config that differs (${c.identical_config_keys} keys are the same):`);
      printTable(ctx, c.config_diff, [
        { header: "KEY", cell: (d) => clean(d.key), flex: true },
        ...ranked.map((r) => ({
          header: clean(r.run_id),
          cell: (d: { values: Record<string, unknown> }) =>
            clean(
              d.values[r.run_id] === null || d.values[r.run_id] === undefined
                ? "-"
                : JSON.stringify(d.values[r.run_id]),
            ),
          flex: true,
        })),
      ], "");
    } else {
      ctx.io.out("");
      ctx.io.out("Their configs are the same.");
    }
    for (const d of c.code_diff ?? []) {
      ctx.io.out("");
      ctx.io.out(
        d.same_code
          ? `code of ${clean(d.b)}: the same as ${clean(d.a)}`
          : `code of ${clean(d.b)} against ${clean(d.a)}: ${d.files.length} files differ`,
      );
      for (const p of d.problems) ctx.io.out(`  (${clean(p)})`);
      for (const f of d.files) {
        ctx.io.out(`--- ${clean(f.path)} (${f.change.replace("_", " ")})`);
        for (const line of f.diff.split("\n")) ctx.io.out(clean(line));
      }
    }
    return EXIT_OK;
  },
});

/** `gpuctl run`. */
export const runCommand = defineGroup(
  "run",
  "list, inspect and compare runs",
  [list, show, compare, waitCommand, ...runLineageCommands],
  "gpuctl run compare r-8c1d0e2f3a4b r-2a9f7e6d5c4b",
);
