/**
 * The console's live connection to the server: subscribes to the event stream and says
 * whether it is connected, reconnecting (the browser retries on its own, e.g. while the server
 * restarts) or closed (the session ended: sign in again), with the newest event it carried.
 */
import { useEffect, useState } from "preact/hooks";

export interface LiveStatusProps {
  /** The SSE endpoint, same origin (the session cookie goes with it). */
  url: string;
}

type State = "connecting" | "connected" | "reconnecting" | "closed";

const LABEL: Record<State, string> = {
  connecting: "connecting…",
  connected: "connected",
  reconnecting: "reconnecting…",
  closed: "disconnected",
};

export default function LiveStatus({ url }: LiveStatusProps) {
  const [state, setState] = useState<State>("connecting");
  const [count, setCount] = useState(0);
  const [last, setLast] = useState<{ type: string; message: string } | null>(null);
  useEffect(() => {
    const source = new EventSource(url);
    source.onopen = () => setState("connected");
    source.onerror = () =>
      setState(source.readyState === EventSource.CLOSED ? "closed" : "reconnecting");
    source.onmessage = (m) => {
      setCount((n) => n + 1);
      try {
        const e = JSON.parse(m.data);
        setLast({ type: String(e.type ?? ""), message: String(e.message ?? "") });
      } catch {
        // a message we cannot read still counts as the connection working
      }
    };
    return () => source.close();
  }, [url]);
  return (
    <div class="live" data-state={state} role="status" aria-live="polite">
      <span class="live-dot" aria-hidden="true" />
      <span class="live-label">Live events: {LABEL[state]}</span>
      {state === "closed" && <a href="/login">sign in again</a>}
      <span class="muted">
        {count === 0 ? "none since this page opened" : `${count} since this page opened`}
      </span>
      {last && (
        <span class="live-last">
          <code>{last.type}</code> {last.message}
        </span>
      )}
    </div>
  );
}
