/**
 * Lists that update live without moving under the pointer (CONSOLE.md: "rows do not jump
 * while the pointer is over them"): while the pointer is over the list, its rows keep their
 * order and only their values change; rows that arrived meanwhile appear when it leaves.
 */
import { useRef, useState } from "preact/hooks";

/** The rows to show, and the handlers that tell the list where the pointer is. */
export function useSteadyRows<T extends { id: string }>(rows: T[]): {
  rows: T[];
  hold: { onMouseEnter: () => void; onMouseLeave: () => void };
} {
  const [held, setHeld] = useState(false);
  const order = useRef<string[]>(rows.map((r) => r.id));
  let shown = rows;
  if (held) {
    const byId = new Map(rows.map((r) => [r.id, r]));
    shown = order.current.flatMap((id) => byId.has(id) ? [byId.get(id)!] : []);
  } else {
    order.current = rows.map((r) => r.id);
  }
  return {
    rows: shown,
    hold: { onMouseEnter: () => setHeld(true), onMouseLeave: () => setHeld(false) },
  };
}
