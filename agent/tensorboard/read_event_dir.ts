// One-shot reading of a TensorBoard directory, for imports.

import type { ScalarPoint } from "./event_decoder.ts";
import { type SkippedReport, TensorBoardTailer } from "./tailer.ts";

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

/** Every scalar under `root` (as `readEventDir`), and what was left out of the files. */
export async function readEventDirReport(
  root: string,
): Promise<{ points: ScalarPoint[]; report: SkippedReport }> {
  const tailer = new TensorBoardTailer(root);
  const points = mergeScalars(await tailer.poll());
  return { points, report: tailer.skippedReport() };
}
