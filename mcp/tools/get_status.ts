/**
 * `get_status`: the cluster at a glance — nodes online, GPUs busy, jobs by state, recent alerts
 * and the head of the queue with when it may start.
 */
import { z } from "zod";
import { getStatus } from "../../server/status/service.ts";
import { defineTool } from "../_tool.ts";

/** `get_status`: `GET /api/status`. */
export const getStatusTool = defineTool({
  name: "get_status",
  title: "Cluster status",
  description: "The cluster at a glance: nodes online, GPUs busy of total, jobs queued and " +
    "running, recent warnings and critical alerts, and the first queued jobs with when they " +
    "may start. Start here.",
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
  }),
  run(ctx) {
    const s = getStatus(ctx);
    const next = s.queue[0];
    return {
      data: { ...s },
      summary: `${s.nodes.online} of ${s.nodes.total} nodes online; ${s.gpus.busy} of ` +
        `${s.gpus.total} GPUs busy; jobs: ${s.jobs.queued} queued, ${s.jobs.dispatched} ` +
        `dispatched, ${s.jobs.running} running; alerts in the last ${s.alerts.window_h} h: ` +
        `${s.alerts.critical} critical, ${s.alerts.warning} warning.` +
        (next
          ? ` Next in the queue: ${next.name} (${next.job_id}), ${next.gpus} GPU(s)` +
            (next.estimated_start_at ? `, expected to start ${next.estimated_start_at}.` : ".")
          : ""),
    };
  },
});
