/**
 * `get_run`: one run — status, progress, config, primary metric, parent, mark, notes and code —
 * summed up in one line.
 */
import { z } from "zod";
import { getRunDetail } from "../../server/lineage/service.ts";
import { defineTool } from "../_tool.ts";
import { runShape } from "../_shapes.ts";
import { runIdField } from "./_fields.ts";
import { metricText } from "./_format.ts";

/** `get_run`: `GET /api/runs/{id}`. */
export const getRunTool = defineTool({
  name: "get_run",
  title: "Run",
  description: "One run: status, step/epoch/max_steps, config, environment snapshot, times, " +
    "its primary metric (key, direction, latest, best, best_step), its parent and mark, its " +
    "notes, and its code (commit, branch, remote, the diff against the commit, untracked " +
    "files). For its health and what to do next use diagnose_run.",
  kind: "observe",
  input: z.object({ run_id: runIdField() }),
  output: runShape,
  run(ctx, { run_id }) {
    const r = getRunDetail(ctx, run_id);
    const progress = r.step !== null
      ? ` at step ${r.step}${r.max_steps ? ` of ${r.max_steps}` : ""}`
      : "";
    return {
      data: { ...r },
      summary: `Run ${r.name} (${r.id}) of ${r.project}${r.experiment ? `/${r.experiment}` : ""} ` +
        `is ${r.status}${progress}${metricText(r.primary_metric)}` +
        (r.parent_run ? `; child of ${r.parent_run}` : "") +
        (r.mark ? `; ${r.mark.mark}: ${r.mark.reason}` : "") +
        (r.code?.git
          ? `; code at ${r.code.git.commit?.slice(0, 12) ?? "no commit"}` +
            (r.code.git.diff ? " with local changes" : "")
          : "") +
        ".",
    };
  },
});
