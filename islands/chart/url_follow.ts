/**
 * The page's URL following its chart view (`history.replaceState`, no reload), so a copied
 * link opens the same view. The first paint's URL stays as typed. A change the smoothing
 * slider makes comes in bursts (an input event per step of a drag) and each write of the URL
 * costs the browser milliseconds: it is written once the slider rests; any other change at
 * once.
 *
 * @module
 */
import { useEffect, useRef } from "preact/hooks";

/** How long the slider rests before the URL takes its value. */
export const SETTLE_MS = 200;

/**
 * Keeps the URL's query at `query` (with its leading `?`, or empty) once it changes; a change
 * that comes with a new `burst` value (the smoothing weight) is written `SETTLE_MS` later.
 */
export function useUrlFollows(query: string, burst: unknown): void {
  const first = useRef(true);
  const lastBurst = useRef(burst);
  const pending = useRef<{ timer: ReturnType<typeof setTimeout>; write: () => void } | null>(null);
  useEffect(() => {
    if (first.current) {
      first.current = false;
      return;
    }
    if (pending.current) clearTimeout(pending.current.timer);
    pending.current = null;
    const write = () => {
      pending.current = null;
      history.replaceState(history.state, "", `${location.pathname}${query}`);
    };
    const settling = lastBurst.current !== burst;
    lastBurst.current = burst;
    if (!settling) return write();
    pending.current = { timer: setTimeout(write, SETTLE_MS), write };
  }, [query]);
  // Leaving the page's view (the island unmounted) writes what is still waiting.
  useEffect(() => () => {
    const p = pending.current;
    if (!p) return;
    clearTimeout(p.timer);
    p.write();
  }, []);
}
