/**
 * Successive halving, as trials reach each rung (asynchronously, as W&B's hyperband and
 * ASHA do it): at a rung, a running trial whose metric is not among the best
 * `keep_fraction` of every trial that has reached that rung is stopped. A trial with no
 * value there yet is kept; a NaN ranks last. Pure: the caller loads the values at the rung.
 *
 * @module
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type { EarlyStop } from "../../protocol/sweeps.ts";
import { fmtNumber } from "../../lib/format.ts";

/** The rungs a trial at `step` has reached: `min_steps`, then every `every` steps. */
export function rungsReached(step: number, s: EarlyStop): number[] {
  const out: number[] = [];
  for (let r = s.min_steps; r <= step; r += s.every) out.push(r);
  return out;
}

/** A trial's value of the sweep's metric at the rung (null: it has none there). */
export interface RungValue {
  index: number;
  value: number | null;
  /** Still running: only these can be stopped. */
  running: boolean;
}

export interface Stop {
  index: number;
  reason: string;
}

const fmt = fmtNumber;

/**
 * Which running trials stop at `rung`: those ranked below the best `keep` of the `n` trials
 * with a value there, `keep = ceil(n × keep_fraction)`. Fewer than two values: nobody.
 */
export function decideRung(
  rung: number,
  values: RungValue[],
  direction: MetricDirection,
  keepFraction: number,
  key: string,
): Stop[] {
  const ranked = values.filter((v) => v.value !== null) as (RungValue & { value: number })[];
  if (ranked.length < 2) return [];
  const better = (a: number, b: number) => {
    if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1;
    if (Number.isNaN(b)) return -1;
    return direction === "min" ? a - b : b - a;
  };
  ranked.sort((a, b) => better(a.value, b.value) || a.index - b.index);
  const keep = Math.max(1, Math.ceil(ranked.length * keepFraction));
  const threshold = ranked[keep - 1].value;
  const best = ranked[0].value;
  return ranked.slice(keep).filter((v) => v.running && better(v.value, threshold) !== 0).map((
    v,
  ) => ({
    index: v.index,
    reason:
      `stopped at rung ${rung}: ${key} ${fmt(v.value)} at step ${rung} is not among the best ` +
      `${keep} of ${ranked.length} trials there (${direction === "min" ? "≤" : "≥"} ${
        fmt(threshold)
      }; best ${fmt(best)})`,
  }));
}
