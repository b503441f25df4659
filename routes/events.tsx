/**
 * `/events`: every event, newest first, coloured by severity; filters for run, job, node,
 * type and severity live in the URL, and a live switch streams new ones.
 */
import { Island } from "../components/island.tsx";
import EventFeed from "../islands/EventFeed.tsx";
import { eventListQuery } from "../protocol/rest/events.ts";
import { SEVERITIES } from "../protocol/vocabulary.ts";
import type { PageRoute } from "../server/console/page.tsx";
import { nowMs, queryFilters, shellPage } from "../server/console/shell.tsx";
import { lastEventId, listEvents } from "../server/events/service.ts";

const FILTERS = ["run_id", "job_id", "node_id", "type", "severity"] as const;
/** Events the page lists at first. */
const EVENTS_SHOWN = 200;

export const routes: PageRoute[] = [{
  method: "GET",
  path: "/events",
  scope: "read",
  handler: (p) => {
    const raw = queryFilters(p, FILTERS);
    const parsed = eventListQuery.safeParse(raw);
    const filter: Record<string, string> = parsed.success
      ? Object.fromEntries(
        Object.entries(parsed.data).filter(([, v]) => typeof v === "string"),
      ) as Record<string, string>
      : {};
    // Read first: an event raised while the list is read is then streamed, not lost.
    const after = lastEventId(p.ctx);
    const events = listEvents(p.ctx, { ...filter, limit: EVENTS_SHOWN }).items;
    const live = p.url.searchParams.get("live") === "1";
    const text = (f: string) => filter[f] ?? "";
    return shellPage(
      p,
      { title: "Events", path: "/events" },
      <>
        <form method="get" action="/events" class="filters">
          <label>
            Run
            <input name="run_id" value={text("run_id")} placeholder="r-…" data-search />
          </label>
          <label>
            Job
            <input name="job_id" value={text("job_id")} placeholder="j-…" />
          </label>
          <label>
            Node
            <input name="node_id" value={text("node_id")} placeholder="any" />
          </label>
          <label>
            Type
            <input name="type" value={text("type")} placeholder="e.g. OOM" />
          </label>
          <label>
            Severity
            <select name="severity">
              <option value="">any</option>
              {SEVERITIES.map((s) => (
                <option value={s} selected={s === text("severity")}>at least {s}</option>
              ))}
            </select>
          </label>
          {live && <input type="hidden" name="live" value="1" />}
          <button type="submit">Filter</button>
          {Object.keys(filter).length > 0 && <a href="/events">clear</a>}
        </form>
        {!parsed.success && (
          <p class="field-error" role="alert">
            Some filters were not understood and are ignored:{" "}
            {parsed.error.issues.map((i) => `${String(i.path[0])} ${i.message}`).join("; ")}
          </p>
        )}
        <section class="panel">
          <Island
            component={EventFeed}
            props={{
              events,
              filter,
              live,
              showSwitch: true,
              after,
              limit: 500,
              empty: Object.keys(filter).length
                ? "No event matches these filters."
                : "No events yet. Jobs, runs, checkpoints, nodes and anomalies all raise events.",
              now: nowMs(p.ctx),
            }}
          />
        </section>
      </>,
    );
  },
}];
