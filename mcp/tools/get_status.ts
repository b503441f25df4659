/**
 * `get_status`: the cluster at a glance — nodes online, GPUs busy, jobs by state, recent alerts
 * and the head of the queue with when it may start.
 */
import { z } from "zod";
import { getStatus } from "../../server/status/service.ts";
import { defineTool } from "../_tool.ts";
import type { BudgetStatus } from "../../protocol/budgets.ts";

/** `get_status`: `GET /api/status`. */
export const getStatusTool = defineTool({
  name: "get_status",
  title: "Cluster status",
  description: "The cluster at a glance: nodes online, GPUs busy of total, jobs queued and " +
    "running, recent warnings and critical alerts, and the first queued jobs with when they " +
    "may start, and this token's budget (each limit, what its jobs use and what is left). " +
    "Start here.",
  kind: "observe",
  input: z.object({}),
  output: z.looseObject({
    nodes: z.looseObject({ online: z.number(), offline: z.number(), total: z.number() }),
    gpus: z.looseObject({ busy: z.number(), total: z.number() }),
    jobs: z.looseObject({ queued: z.number(), dispatched: z.number(), running: z.number() }),
    alerts: z.looseObject({
      warning: z.number(),
      critical: z.number(),
      recent: z.array(z.unknown()),
    }),
    queue: z.array(z.looseObject({ job_id: z.string() })).describe("The first queued jobs"),
    budget: z.record(
      z.string(),
      z.looseObject({ limit: z.number(), used: z.number().nullable(), left: z.number().nullable() })
        .nullable(),
    ).nullable().optional().describe(
      "This token's budget: per budget its limit, use and what is left (null: no limit); " +
        "null: no budget",
    ),
  }),
  run(ctx, _args, call) {
    const s = getStatus(ctx, call.principal.token_id);
    const next = s.queue[0];
    return {
      data: { ...s },
      summary: `${s.nodes.online} of ${s.nodes.total} nodes online; ${s.gpus.busy} of ` +
        `${s.gpus.total} GPUs busy; jobs: ${s.jobs.queued} queued, ${s.jobs.dispatched} ` +
        `dispatched, ${s.jobs.running} running; alerts in the last ${s.alerts.window_h} h: ` +
        `${s.alerts.critical} critical, ${s.alerts.warning} warning.` +
        budgetSummary(s.budget ?? null) +
        (next
          ? ` Next in the queue: ${next.name} (${next.job_id}), ${next.gpus} GPU(s)` +
            (next.estimated_start_at ? `, expected to start ${next.estimated_start_at}.` : ".")
          : ""),
    };
  },
});

/** The budget in one sentence: what is left of each limit. */
function budgetSummary(b: BudgetStatus | null): string {
  if (!b) return "";
  const parts = Object.entries(b).flatMap(([name, line]) =>
    line
      ? [
        `${name} ${
          line.left === null ? `limit ${line.limit}` : `${line.left} of ${line.limit} left`
        }`,
      ]
      : []
  );
  return parts.length ? ` Budget: ${parts.join(", ")}.` : "";
}
