/** `list_nodes`: the GPU hosts with their status, GPUs, resources, labels and last heartbeat. */
import { z } from "zod";
import { listNodes } from "../../server/nodes/service.ts";
import { defineTool } from "../_tool.ts";
import { pageOf } from "../_shapes.ts";

/** `list_nodes`: `GET /api/nodes`. */
export const listNodesTool = defineTool({
  name: "list_nodes",
  title: "GPU nodes",
  description: "The GPU hosts: status (ONLINE/OFFLINE), their GPUs (index, name, memory), CPU, " +
    "memory, disk, labels and the last heartbeat. Use a node's id in submit_job's node.",
  kind: "observe",
  input: z.object({}),
  output: pageOf(
    z.looseObject({
      id: z.string(),
      status: z.string(),
      gpus: z.array(z.looseObject({ index: z.number(), name: z.string() })),
    }),
    "The nodes",
  ),
  run(ctx) {
    const page = listNodes(ctx);
    const parts = page.items.map((n) =>
      `${n.id} ${n.status} with ${n.gpus.length} GPU(s)` +
      (n.gpus[0] ? ` (${n.gpus[0].name}, ${n.gpus[0].memory_total_mb} MB)` : "")
    );
    return {
      data: { ...page },
      summary: page.items.length
        ? `${page.items.length} node(s): ${parts.join("; ")}.`
        : "No node has connected yet: start an agent on a GPU host (deno task agent).",
    };
  },
});
