/**
 * `query_runs`: the runs that match a JSON filter (on fields, mark, config values and metric
 * bests), in the order asked, with how many matched and whether older runs went unseen.
 */
import { z } from "zod";
import { runQuery } from "../../protocol/run_query.ts";
import { queryRuns } from "../../server/runs/query.ts";
import { defineTool } from "../_tool.ts";
import { runShape } from "../_shapes.ts";
import { metricText } from "./_format.ts";

/** `query_runs`: `POST /api/runs:query`. */
export const queryRunsTool = defineTool({
  name: "query_runs",
  title: "Query runs",
  description: "Runs that match a JSON filter, in an order: where {project, experiment, status, " +
    'parent_run, mark: "kept"|"discarded"|"none", created_after, created_before, config: ' +
    '{"lr": {"lt": 0.01}}, metrics: {"eval/loss": {"best": {"lt": 0.3}}}}, order_by ' +
    '("metric.eval/loss.best", "-created_at", "config.lr"), limit. E.g. the best kept runs: ' +
    '{where: {mark: "kept"}, order_by: "metric.eval/loss.best", limit: 3}.',
  kind: "observe",
  input: runQuery,
  output: z.looseObject({
    items: z.array(runShape).describe("The matching runs, in order"),
    matched: z.number().describe("How many matched (before limit)"),
    scanned: z.number(),
    truncated: z.boolean().describe("True: older runs were not looked at; narrow the query"),
  }),
  run(ctx, args) {
    const r = queryRuns(ctx, args);
    const lines = r.items.slice(0, 10).map((run) =>
      `${run.id} ${run.name} ${run.status}${metricText(run.primary_metric)}`
    );
    return {
      data: { ...r },
      summary: `${r.matched} of ${r.scanned} runs match` +
        (r.truncated ? " (older runs not looked at: narrow by project or time)" : "") +
        (lines.length ? `:\n${lines.join("\n")}` : "."),
    };
  },
});
