/** `/nodes`: a card per GPU host with its GPUs, their live readings and what runs on them. */
import { Island } from "../components/island.tsx";
import Fleet from "../islands/Fleet.tsx";
import { fmtDuration, fmtInt } from "../lib/format.ts";
import { holderOf } from "../server/console/dashboard.ts";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, shellPage } from "../server/console/shell.tsx";
import type { IngestStatus } from "../server/gateway/ingest_queue.ts";
import { listJobs } from "../server/jobs/service.ts";
import { listNodes } from "../server/nodes/service.ts";

/** From this far behind (seconds) the page says so in a banner. */
export const BEHIND_NOTICE_S = 2;

/** How far behind storing the agents' data the server is: a banner when it is, else a line. */
export function IngestLine({ ingest }: { ingest: IngestStatus | null }) {
  if (!ingest) return null;
  const waiting = ingest.pending_frames + ingest.unsent_frames;
  if (ingest.behind_s < BEHIND_NOTICE_S) {
    return (
      <p class="small muted" data-ingest-behind-s={ingest.behind_s}>
        Storing agents' data: {fmtInt(Math.round(ingest.frames_per_s))} frames/s in{" "}
        {fmtInt(Math.round(ingest.commits_per_s))} commits/s, up to date
        {waiting > 0 ? ` (${fmtInt(waiting)} frames in flight)` : ""}.
      </p>
    );
  }
  return (
    <div class="banner" role="status" data-ingest-behind-s={ingest.behind_s}>
      <strong>
        The server is behind storing agents' data by {fmtDuration(ingest.behind_s)}
      </strong>: {fmtInt(waiting)} frames wait ({fmtInt(ingest.unsent_frames)}{" "}
      held in agents' spools, {fmtInt(ingest.pending_frames)}{" "}
      received and not yet stored). Agents send less until it catches up; charts and logs lag by as
      much, and nothing is lost.
      {ingest.nodes.length > 0 && (
        <ul class="small">
          {ingest.nodes.slice(0, 10).map((n) => (
            <li key={n.node_id}>
              {n.node_id}: {fmtInt(n.unsent_frames)} frames, the oldest {fmtDuration(n.oldest_s)}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

export const routes: PageRoute[] = [{
  method: "GET",
  path: "/nodes",
  scope: "read",
  handler: (p) =>
    shellPage(
      p,
      { title: "Nodes", path: "/nodes" },
      <>
        <IngestLine ingest={p.ctx.agents?.ingestStatus?.() ?? null} />
        <Island
          component={Fleet}
          props={{
            nodes: listNodes(p.ctx).items,
            holders: listJobs(p.ctx, { status: "RUNNING", limit: 200 }).items.map(holderOf),
            variant: "cards",
            now: nowMs(p.ctx),
          }}
        />
      </>,
    ),
}];
