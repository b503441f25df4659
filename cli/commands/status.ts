// `gpuctl status`: nodes, GPUs busy/total, running and queued jobs, unhandled alerts.

import type { StatusOverview } from "../../server/status/service.ts";
import { EXIT_OK } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand } from "../define_command.ts";
import { DATA_FLAGS } from "../flags.ts";
import { printBudget } from "../budget.ts";
import { ago, clean, paint, paintStatus, printTable } from "../output.ts";

export const statusCommand = defineCommand({
  name: "status",
  summary: "nodes, GPUs busy of total, running and queued jobs, and recent alerts",
  examples: ["gpuctl status", "gpuctl status --json | jq .gpus"],
  flags: DATA_FLAGS,
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const s = await client.get<StatusOverview>("/api/status");
    if (flags.json) {
      ctx.io.out(JSON.stringify(s));
      return EXIT_OK;
    }
    const now = ctx.now();
    ctx.io.out(
      `nodes   ${s.nodes.online} online` +
        (s.nodes.offline ? `, ${paint(ctx, "red", `${s.nodes.offline} offline`)}` : "") +
        ` (${s.nodes.total} in all)`,
    );
    ctx.io.out(`gpus    ${s.gpus.busy} busy of ${s.gpus.total}`);
    ctx.io.out(
      `jobs    ${s.jobs.running} running, ${s.jobs.dispatched} starting, ${s.jobs.queued} queued`,
    );
    const alerts = s.alerts.warning + s.alerts.critical;
    ctx.io.out(
      `alerts  ${
        alerts
          ? paint(
            ctx,
            s.alerts.critical ? "red" : "yellow",
            `${s.alerts.critical} critical, ${s.alerts.warning} warning`,
          )
          : "none"
      } in the last ${s.alerts.window_h}h`,
    );
    printBudget(ctx, s.budget, "budget (this token)");
    if (s.alerts.recent.length) {
      ctx.io.out("");
      printTable(ctx, s.alerts.recent, [
        { header: "WHEN", cell: (e) => ago(e.ts, now) },
        { header: "SEVERITY", cell: (e) => paintStatus(ctx, e.severity) },
        { header: "TYPE", cell: (e) => clean(e.type) },
        { header: "RUN", cell: (e) => clean(e.run_id ?? e.job_id ?? e.node_id ?? "") },
        { header: "MESSAGE", cell: (e) => clean(e.message), flex: true },
      ], "");
    }
    if (s.queue.length) {
      ctx.io.out("");
      printTable(ctx, s.queue, [
        { header: "QUEUED", cell: (q) => clean(q.job_id) },
        { header: "NAME", cell: (q) => clean(q.name), flex: true },
        { header: "GPUS", cell: (q) => String(q.gpus), right: true },
        { header: "PRIO", cell: (q) => String(q.priority), right: true },
        {
          header: "STARTS",
          cell: (q) =>
            q.estimated_start_at
              ? `~${new Date(q.estimated_start_at).toISOString().slice(11, 16)} UTC` +
                (q.estimated_node ? ` on ${clean(q.estimated_node)}` : "")
              : "unknown",
        },
        { header: "WAITING FOR", cell: (q) => clean(q.reason ?? ""), flex: true },
      ], "");
    }
    return EXIT_OK;
  },
});
