/**
 * The pure parts of `deno task bench:peers`: what a search's trials add up to (the best final
 * value, the trial-seconds until the running best came within 1 % of it), medians over seeds,
 * and the one way each row's numbers are written.
 */

/** One trial of a search, as each tool's results give it. */
export interface Trial {
  /** Unix seconds. */
  start: number;
  end: number;
  /** The final value of the metric (lower is better); null when it was stopped early. */
  value: number | null;
  /** The step it was stopped at; null when it ran to the end. */
  stopped_at: number | null;
}

/** What one search found, and what it cost. */
export interface SearchOutcome {
  /** The best final value of a trial that ran to the end; null when none did. */
  best: number | null;
  /** Trial-seconds (the sum of trial durations, in the order trials ended) until the running
   *  best was within `tolerance` of `best`; null when there is no best. */
  toWithinS: number | null;
  /** Every trial's duration, summed. */
  trialS: number;
  trials: number;
  stopped: number;
}

/** The outcome of one search: trials in the order they ended, their seconds summed. */
export function searchOutcome(trials: Trial[], tolerance = 0.01): SearchOutcome {
  const ended = [...trials].sort((a, b) => a.end - b.end);
  const finals = ended.flatMap((t) =>
    t.value === null || !Number.isFinite(t.value) ? [] : [t.value]
  );
  const best = finals.length ? Math.min(...finals) : null;
  let spent = 0;
  let toWithinS: number | null = null;
  for (const t of ended) {
    spent += Math.max(0, t.end - t.start);
    if (
      toWithinS === null && best !== null && t.value !== null &&
      t.value <= best + Math.abs(best) * tolerance
    ) toWithinS = spent;
  }
  return {
    best,
    toWithinS,
    trialS: spent,
    trials: trials.length,
    stopped: trials.filter((t) => t.stopped_at !== null).length,
  };
}

/** The median of the numbers that are there (null when none are). */
export function median(xs: (number | null)[]): number | null {
  const s = xs.filter((x): x is number => x !== null && Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** A number the way the tables write it: thousands separated, else 3 significant digits. */
export function num(n: number): string {
  return Math.abs(n) >= 1000
    ? Math.round(n).toLocaleString("en")
    : String(Number(n.toPrecision(3)));
}

/** Several seeds' values: "median (min–max, n of N)". */
export function spread(xs: (number | null)[], unit = ""): string {
  const got = xs.filter((x): x is number => x !== null && Number.isFinite(x));
  const m = median(got);
  if (m === null) return `none in ${xs.length} seeds`;
  const u = unit ? ` ${unit}` : "";
  const range = got.length > 1 ? ` (${num(Math.min(...got))}–${num(Math.max(...got))})` : "";
  const missing = got.length < xs.length ? `, ${got.length} of ${xs.length} seeds` : "";
  return `median ${num(m)}${u}${range}${missing}`;
}
