/**
 * `get_logs`: a run's output lines — the tail by default, or those after a seq — with how to
 * page on; `TOOL_LOG_LINES` is how many an answer holds unless asked for more.
 */
import { z } from "zod";
import { logsQuery, MAX_LOG_LINES } from "../../protocol/rest/runs.ts";
import { getLogs } from "../../server/runs/service.ts";
import { defineTool } from "../_tool.ts";
import { runIdField } from "./_fields.ts";

/** Lines a tool answer holds unless `limit` asks for more. */
export const TOOL_LOG_LINES = 100;

/** `get_logs`: `GET /api/runs/{id}/logs`. */
export const getLogsTool = defineTool({
  name: "get_logs",
  title: "Run log",
  description: `A run's output lines (stdout, stderr, system): the last ${TOOL_LOG_LINES} ` +
    "(the tail) by default, or the lines after after_seq, oldest first. Each line has a seq; " +
    `page on with after_seq = the last seq. limit is at most ${MAX_LOG_LINES}.`,
  kind: "observe",
  input: logsQuery.extend({ run_id: runIdField() }),
  output: z.looseObject({
    lines: z.array(z.looseObject({
      seq: z.number(),
      ts: z.string(),
      stream: z.string(),
      text: z.string(),
    })),
  }),
  run(ctx, { run_id, ...query }) {
    const limit = query.limit ?? TOOL_LOG_LINES;
    const answer = getLogs(ctx, run_id, { ...query, limit });
    const lines = answer.lines;
    const first = lines[0]?.seq;
    const last = lines[lines.length - 1]?.seq;
    const text = lines.map((l) => `${l.stream === "stderr" ? "! " : ""}${l.text}`).join("\n");
    const more = lines.length === limit
      ? query.after_seq === undefined
        ? ` Older lines: get_logs with after_seq ${Math.max(0, (first ?? 0) - limit - 1)}.`
        : ` More: get_logs with {"run_id": "${run_id}", "after_seq": ${last}}.`
      : "";
    return {
      data: { ...answer },
      summary: lines.length
        ? `${lines.length} line(s) of run ${run_id}, seq ${first}–${last}.${more}\n${text}`
        : `No log lines of run ${run_id}${
          query.after_seq !== undefined ? ` after seq ${query.after_seq}` : ""
        }.`,
    };
  },
});
