/** `/nodes`: a card per GPU host with its GPUs, their live readings and what runs on them. */
import { Island } from "../components/island.tsx";
import Fleet from "../islands/Fleet.tsx";
import { holderOf } from "../server/console/dashboard.ts";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, shellPage } from "../server/console/shell.tsx";
import { listJobs } from "../server/jobs/service.ts";
import { listNodes } from "../server/nodes/service.ts";

export const nodesRoutes: PageRoute[] = [{
  method: "GET",
  path: "/nodes",
  scope: "read",
  handler: (p) =>
    shellPage(
      p,
      { title: "Nodes", path: "/nodes" },
      <Island
        component={Fleet}
        props={{
          nodes: listNodes(p.ctx).items,
          holders: listJobs(p.ctx, { status: "RUNNING", limit: 200 }).items.map(holderOf),
          variant: "cards",
          now: nowMs(p.ctx),
        }}
      />,
    ),
}];
