// One-shot reading of a TensorBoard directory, for imports.

import type { ScalarPoint } from "./event_decoder.ts";
import { TensorBoardTailer } from "./tailer.ts";

/**
 * Applies `points` in order keeping the last write per (tag, step), as the metric store
 * does, and returns the survivors sorted by tag, then step.
 */
export function mergeScalars(points: Iterable<ScalarPoint>): ScalarPoint[] {
  const byTag = new Map<string, Map<number, ScalarPoint>>();
  for (const point of points) {
    let steps = byTag.get(point.tag);
    if (steps === undefined) {
      steps = new Map();
      byTag.set(point.tag, steps);
    }
    steps.set(point.step, point);
  }
  const tags = [...byTag.keys()].sort();
  return tags.flatMap((tag) => [...byTag.get(tag)!.values()].sort((a, b) => a.step - b.step));
}

/** Every scalar under `root`, merged so the newest file wins each (tag, step). */
export async function readEventDir(root: string): Promise<ScalarPoint[]> {
  return mergeScalars(await new TensorBoardTailer(root).poll());
}
