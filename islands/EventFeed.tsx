/**
 * A timeline of events, newest first, coloured by severity, that takes new events from the
 * server's event stream while live. On the Events page a switch turns live on and off (and
 * keeps the choice in the URL); on a run's pages it follows that run's events.
 */
import { useEffect, useState } from "preact/hooks";
import { EVENTS_URL, type LiveEvent, subscribe, useNow } from "./_live.ts";
import { EventItem } from "./_ui.tsx";

export interface EventFeedProps {
  events: LiveEvent[];
  /** The stream's filters: run_id, job_id, node_id, type, severity (at least). */
  filter: Record<string, string>;
  live: boolean;
  /** Show the live switch (the Events page). */
  showSwitch?: boolean;
  /** At most this many events stay listed. */
  limit: number;
  /** Leave out the run/job/node links (a run's own page). */
  compact?: boolean;
  /** The newest event id when the page was rendered (the stream resumes after it). */
  after: number;
  /** What to say when there is nothing. */
  empty: string;
  now: number;
}

export default function EventFeed(props: EventFeedProps) {
  const { filter, limit, compact } = props;
  const [events, setEvents] = useState(props.events);
  const [live, setLive] = useState(props.live);
  const now = useNow(props.now);
  const query = new URLSearchParams(filter).toString();
  useEffect(() => {
    if (!live) return;
    // From the newest event the page was rendered with: nothing raised since is missed.
    const after = events.reduce((m, e) => Math.max(m, e.id), props.after);
    return subscribe(query ? `${EVENTS_URL}?${query}` : EVENTS_URL, {
      after: after || null,
      message: (d) => {
        const e = d as LiveEvent;
        setEvents((list) => list.some((x) => x.id === e.id) ? list : [e, ...list].slice(0, limit));
      },
    });
  }, [live, query]);
  const toggle = (on: boolean) => {
    setLive(on);
    if (props.showSwitch) {
      const u = new URL(location.href);
      if (on) u.searchParams.set("live", "1");
      else u.searchParams.delete("live");
      history.replaceState(null, "", u);
    }
  };
  return (
    <div class="event-feed">
      {props.showSwitch && (
        <label class="live-switch">
          <input
            type="checkbox"
            checked={live}
            onChange={(e) => toggle((e.currentTarget as HTMLInputElement).checked)}
          />{" "}
          Live: new events appear at the top
        </label>
      )}
      {events.length === 0
        ? <p class="muted empty">{props.empty}</p>
        : (
          <ul class={`event-list${compact ? " compact" : ""}`}>
            {events.map((e) => (
              <EventItem key={e.id} e={e} now={now} links={compact ? "none" : "all"} />
            ))}
          </ul>
        )}
    </div>
  );
}
