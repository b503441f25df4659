/** A real Keras TensorBoard run from tests/fixtures/tfevents, as one run's points (tests only). */
import { TFEVENTS } from "../../tests/fixtures/mod.ts";
import type { MetricPoint } from "./rule_event.ts";

/** The decoded scalars of the real TensorBoard runs in `tests/fixtures/tfevents` (tests only). */
const EXPECTED_SCALARS = new URL("expected-scalars.jsonl", TFEVENTS);

interface ScalarLine {
  file: string;
  tag: string;
  step: number;
  wall_time: number;
  value: number;
}

/**
 * The `keras-exp0` run as one gpuctl run: the `train/` and `validation/` subfolders become key
 * prefixes (`train/epoch_loss`, `validation/epoch_loss`), in the file's order.
 */
export async function loadKerasExp0(): Promise<MetricPoint[]> {
  const text = await Deno.readTextFile(EXPECTED_SCALARS);
  const points: MetricPoint[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const row = JSON.parse(line) as ScalarLine;
    const prefix = row.file.startsWith("keras-exp0/train/")
      ? "train/"
      : row.file.startsWith("keras-exp0/validation/")
      ? "validation/"
      : null;
    if (prefix === null) continue;
    points.push({
      key: prefix + row.tag,
      step: row.step,
      value: row.value,
      wall_time: row.wall_time,
    });
  }
  return points;
}
