/** Raising one FOREIGN_GPU_PROCESS event per (GPU, pid) while the process stays. */
import type { ForeignProcess } from "./gpu/mod.ts";

/**
 * The foreign processes not seen in the previous sample (to raise an event for), and the
 * keys to remember for the next one. A process that goes away and comes back alerts again.
 */
export function newForeignProcesses(
  seen: ReadonlySet<string>,
  foreign: readonly ForeignProcess[],
): { fresh: ForeignProcess[]; seen: Set<string> } {
  const next = new Set<string>();
  const fresh: ForeignProcess[] = [];
  for (const process of foreign) {
    const key = `${process.gpu_index}:${process.pid}`;
    if (next.has(key)) continue;
    next.add(key);
    if (!seen.has(key)) fresh.push(process);
  }
  return { fresh, seen: next };
}
