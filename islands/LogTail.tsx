/**
 * A run's log tail, live: new lines arrive over the run's log stream and the view follows
 * them, until the reader scrolls up (then it holds still and offers to jump to the end).
 * ANSI colours become styled spans; every line is text, never markup.
 */
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { AnsiLine } from "./_ansi.tsx";
import { type LiveState, subscribe } from "./_live.ts";

export interface LogLineView {
  seq: number;
  stream: string;
  text: string;
}

export interface LogTailProps {
  runId: string;
  lines: LogLineView[];
  /** Whether more lines may come (the run is active). */
  live: boolean;
  /** Lines kept in view. */
  keep: number;
}

export default function LogTail({ runId, lines: initial, live, keep }: LogTailProps) {
  const [lines, setLines] = useState(initial);
  const [follow, setFollow] = useState(true);
  const [state, setState] = useState<LiveState | "static">(live ? "connecting" : "static");
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!live) return;
    // After the last line shown, or from the first line when the page showed none.
    const after = initial.length ? initial[initial.length - 1].seq : 0;
    return subscribe(`/api/runs/${encodeURIComponent(runId)}/logs/stream`, {
      after,
      message: (d) => {
        const more = (d as { lines?: LogLineView[] }).lines ?? [];
        setLines((old) => {
          const last = old.length ? old[old.length - 1].seq : -1;
          const fresh = more.filter((l) => l.seq > last);
          return fresh.length ? [...old, ...fresh].slice(-keep) : old;
        });
      },
      state: (s) => setState(s),
    });
  }, [runId, live]);
  useLayoutEffect(() => {
    const el = box.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);
  const onScroll = () => {
    const el = box.current;
    if (!el) return;
    const atEnd = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    if (atEnd !== follow) setFollow(atEnd);
  };
  return (
    <div class="log-tail" data-state={state}>
      <div class="log-bar">
        <span>
          <span class="log-count">{lines.length}</span> lines
          {state === "connected" && (follow ? " · following" : " · paused while you read")}
          {state === "reconnecting" && <span class="tone-warning">· reconnecting…</span>}
          {state === "ended" && " · the run has ended"}
        </span>
        {!follow && (
          <button type="button" class="small" onClick={() => setFollow(true)}>
            Jump to the end
          </button>
        )}
      </div>
      <div class="log" ref={box} onScroll={onScroll} tabIndex={0} aria-label="log">
        {lines.length === 0
          ? <p class="muted log-empty">No output yet.</p>
          : lines.map((l) => (
            <div key={l.seq} class={`log-line ${l.stream === "stderr" ? "stderr" : ""}`}>
              <span class="log-no">{l.seq}</span>
              <span class="log-text">
                <AnsiLine line={l.text} />
              </span>
            </div>
          ))}
      </div>
    </div>
  );
}
