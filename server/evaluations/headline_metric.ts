/** Which metric of an evaluation's results speaks for it: pure choices over plain data. */

import type { MetricDirection } from "../../protocol/vocabulary.ts";
import { decodeMetricValue } from "../../protocol/metric_value.ts";

/** A reported metric value as a number: numbers as they are, "NaN"/"±Infinity" parsed, else null. */
export const metricNumber = decodeMetricValue;

const basename = (key: string) => key.slice(key.lastIndexOf("/") + 1);

/**
 * The key that ranks a set of evaluation results: among the keys with a finite number in at
 * least one result and a known direction, the run's primary metric (`eval/loss`), else the key
 * with its last path part (`loss`), else the key most results have (first seen on a tie).
 * Null when no key has both a number and a direction.
 */
export function chooseEvaluationKey(
  results: readonly Record<string, unknown>[],
  preferred: string | null,
  directions: Readonly<Record<string, MetricDirection>>,
): { key: string; direction: MetricDirection } | null {
  const coverage = new Map<string, number>();
  for (const metrics of results) {
    for (const [key, value] of Object.entries(metrics)) {
      const n = metricNumber(value);
      if (n === null || !Number.isFinite(n) || !directions[key]) continue;
      coverage.set(key, (coverage.get(key) ?? 0) + 1);
    }
  }
  if (coverage.size === 0) return null;
  const pick = (key: string) => ({ key, direction: directions[key] });
  if (preferred !== null) {
    if (coverage.has(preferred)) return pick(preferred);
    const short = basename(preferred);
    if (coverage.has(short)) return pick(short);
    const same = [...coverage.keys()].find((k) => basename(k) === short);
    if (same) return pick(same);
  }
  let best: string | null = null;
  for (const [key, n] of coverage) {
    if (best === null || n > coverage.get(best)!) best = key;
  }
  return pick(best!);
}

/**
 * The metric an evaluation is announced with: the ranking key when one fits, else its first
 * numeric result; null for results with no number.
 */
export function headlineMetric(
  metrics: Record<string, unknown>,
  preferred: string | null,
  directions: Readonly<Record<string, MetricDirection>>,
): { key: string; value: number } | null {
  const chosen = chooseEvaluationKey([metrics], preferred, directions);
  if (chosen) return { key: chosen.key, value: metricNumber(metrics[chosen.key])! };
  for (const [key, value] of Object.entries(metrics)) {
    const n = metricNumber(value);
    if (n !== null) return { key, value: n };
  }
  return null;
}
