/**
 * `get_lineage`: the family tree of a run, or every tree of an experiment, with marks and
 * primary metrics, shown as an indented text tree; names the best kept run.
 */
import { z } from "zod";
import { type LineageNode, lineageQuery } from "../../protocol/lineage.ts";
import { getLineage } from "../../server/lineage/service.ts";
import { defineTool } from "../_tool.ts";
import { metricText } from "./_format.ts";

/** `get_lineage`: `GET /api/lineage`. */
export const getLineageTool = defineTool({
  name: "get_lineage",
  title: "Lineage",
  description: "The family tree of runs: for run_id, the tree it belongs to; for experiment " +
    '("<project>/<experiment>"), every tree of the experiment. Each node: run, status, ' +
    "kept/discarded with its reason, primary metric, what its fork changed, its commit, and its " +
    "children. best_kept names the best kept run by primary metric: fork_run from it next.",
  kind: "observe",
  input: lineageQuery,
  output: z.looseObject({
    roots: z.array(z.looseObject({ run_id: z.string(), children: z.array(z.unknown()) }))
      .describe("The trees: each node has run_id, mark, primary_metric and children"),
    runs: z.number(),
    kept: z.number(),
    discarded: z.number(),
    best_kept: z.string().nullable().describe("The best kept run, or null"),
  }),
  run(ctx, args) {
    const l = getLineage(ctx, args);
    const lines: string[] = [];
    const walk = (n: LineageNode, depth: number) => {
      if (lines.length >= 30) return;
      lines.push(
        `${"  ".repeat(depth)}${n.run_id} ${n.name} ${n.status}` +
          (n.mark ? ` ${n.mark.mark} (${n.mark.reason})` : "") + metricText(n.primary_metric),
      );
      for (const c of n.children) walk(c, depth + 1);
    };
    for (const r of l.roots) walk(r, 0);
    return {
      data: { ...l },
      summary: `${l.runs} runs in ${l.project}${l.experiment ? `/${l.experiment}` : ""}, ` +
        `${l.kept} kept, ${l.discarded} discarded` +
        (l.best_kept ? `; best kept: ${l.best_kept}` : "") + `.\n${lines.join("\n")}` +
        (l.runs > lines.length ? `\n… (${l.runs - lines.length} more in the JSON)` : ""),
    };
  },
});
