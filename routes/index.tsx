/**
 * `/`, the Dashboard: can another job start now, and does anything need attention? Cards and
 * alerts, active runs, the head of the queue, and the fleet, each live.
 */
import { Island } from "../components/island.tsx";
import ActiveRuns from "../islands/ActiveRuns.tsx";
import Fleet from "../islands/Fleet.tsx";
import Overview from "../islands/Overview.tsx";
import { loadDashboard } from "../server/console/dashboard.ts";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, shellPage } from "../server/console/shell.tsx";

export const routes: PageRoute[] = [{
  method: "GET",
  path: "/",
  scope: "read",
  handler: async (p) => {
    const d = await loadDashboard(p.ctx);
    const now = nowMs(p.ctx);
    return shellPage(
      p,
      {
        title: "Dashboard",
        path: "/",
        overview: d.status,
        action: <a class="button primary" href="/jobs?submit=1#submit">+ submit job</a>,
      },
      <>
        <Island component={Overview} props={{ status: d.status, now, canWrite: p.canWrite }} />
        <section class="panel">
          <h2>Active runs</h2>
          <Island component={ActiveRuns} props={{ runs: d.runs, series: d.series }} />
        </section>
        <section class="panel">
          <h2>Fleet</h2>
          <Island
            component={Fleet}
            props={{ nodes: d.nodes, holders: d.holders, variant: "rows", now }}
          />
        </section>
      </>,
    );
  },
}];
