// `gpuctl node list`

import type { NodeRecord, Page } from "../../protocol/objects.ts";
import { EXIT_OK } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand, defineGroup } from "../define_command.ts";
import { DATA_FLAGS } from "../flags.ts";
import { ago, clean, paintStatus, printPage } from "../output.ts";

const list = defineCommand({
  name: "node list",
  summary: "the GPU hosts: status, GPUs, agent version and last heartbeat",
  examples: ["gpuctl node list", "gpuctl node list --json | jq '.items[].gpus'"],
  flags: DATA_FLAGS,
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const page = await client.get<Page<NodeRecord>>("/api/nodes");
    const now = ctx.now();
    printPage(ctx, flags.json, page, [
      { header: "ID", cell: (n) => clean(n.id) },
      { header: "HOST", cell: (n) => clean(n.hostname), flex: true },
      { header: "STATUS", cell: (n) => paintStatus(ctx, n.status) },
      {
        header: "GPUS",
        cell: (n) =>
          `${n.gpus.length}` + (n.gpus[0] ? ` × ${clean(n.gpus[0].name)}` : "") +
          (n.fake_gpus ? " (fake)" : ""),
        flex: true,
      },
      { header: "CPU SLOTS", cell: (n) => String(n.cpu_slots), right: true },
      { header: "AGENT", cell: (n) => clean(n.agent_version ?? "") },
      { header: "SEEN", cell: (n) => ago(n.last_heartbeat_at, now) },
    ], "No nodes: start an agent (gpuctl agent --server URL) on a GPU host.");
    return EXIT_OK;
  },
});

/** `gpuctl node`. */
export const nodeCommand = defineGroup("node", "list the GPU hosts", [list], "gpuctl node list");
