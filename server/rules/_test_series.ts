/** Made-up metric series for the rules' tests: a noisy falling loss, points at given steps. */
import type { MetricPoint } from "./rule_event.ts";

/** A slowly falling, slightly noisy loss (deterministic), as real training logs it. */
export function noisyLoss(step: number): number {
  return 2 - 0.001 * step + 0.02 * Math.sin(step * 1.7);
}

/** Points of `key` at `steps`, one second apart from `t0`, with values from `f`. */
export function series(
  key: string,
  steps: Iterable<number>,
  f: (step: number) => number,
  t0 = 1_700_000_000,
): MetricPoint[] {
  return [...steps].map((step) => ({ key, step, value: f(step), wall_time: t0 + step }));
}

/** The integers from `from` up to but excluding `to`. */
export function range(from: number, to: number): number[] {
  return Array.from({ length: Math.max(0, to - from) }, (_, i) => from + i);
}
