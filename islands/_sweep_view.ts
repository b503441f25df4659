/**
 * What a sweep's page draws, from the sweep and its trials' curves: one curve per trial that
 * has a run, and for each numeric parameter a scatter of its value against each trial's best.
 * The page renders with it, and its charts island rebuilds it from the API while the sweep
 * runs, so trials that start after the page opened appear without a reload.
 */
import type { Sweep } from "../protocol/sweeps.ts";
import { runColor } from "./_format.ts";

export interface SweepTrialSeries {
  index: number;
  run_id: string;
  label: string;
  color: string;
  stopped: boolean;
  steps: number[];
  /** null where the value was NaN or infinite. */
  values: (number | null)[];
}

/** Parameter → for each trial with a best value: the value and that best. */
export interface SweepScatter {
  parameter: string;
  log: boolean;
  points: { x: number; y: number; color: string }[];
}

/** One trial's curve as `metrics:query` answers it. */
export interface TrialCurve {
  run_id: string;
  steps: number[];
  values: (number | string | null)[];
}

/** A trial's parameters as one line (`lr=0.01 depth=4`). */
export function paramsLabel(params: Record<string, unknown>): string {
  return Object.entries(params).map(([k, v]) => `${k}=${v}`).join(" ");
}

/** The runs whose curves the page draws. */
export function trialRunIds(s: Pick<Sweep, "trials">): string[] {
  return s.trials.flatMap((t) => t.run_id ? [t.run_id] : []);
}

/** The curves and the scatters of a sweep, given its trials' curves. */
export function sweepView(
  s: Pick<Sweep, "trials" | "parameters">,
  curves: TrialCurve[],
): { series: SweepTrialSeries[]; scatter: SweepScatter[] } {
  const series = s.trials.flatMap((t) => {
    const got = t.run_id ? curves.find((x) => x.run_id === t.run_id) : undefined;
    if (!t.run_id || !got) return [];
    return [{
      index: t.index,
      run_id: t.run_id,
      label: paramsLabel(t.params),
      color: runColor(t.run_id),
      stopped: t.status === "STOPPED",
      steps: got.steps,
      values: got.values.map((v) => typeof v === "number" && Number.isFinite(v) ? v : null),
    }];
  });
  const scatter = Object.entries(s.parameters).flatMap(([parameter, spec]) => {
    const points = s.trials.filter((t) =>
      t.metric.best !== null && typeof t.params[parameter] === "number"
    ).map((t) => ({
      x: t.params[parameter] as number,
      y: t.metric.best!,
      color: t.run_id ? runColor(t.run_id) : "#888",
    }));
    const log = ("scale" in spec && spec.scale === "log") ||
      ("distribution" in spec && spec.distribution === "log_uniform");
    return points.length ? [{ parameter, log, points }] : [];
  });
  return { series, scatter };
}
