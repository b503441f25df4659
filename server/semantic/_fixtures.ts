/** Plain-data builders for the semantic layer's unit tests. Private to this folder. */
import type { Checkpoint, Evaluation, Run } from "../../protocol/objects.ts";
import type { KeySummary } from "../db/metrics.ts";
import type { SeriesWindow } from "./trend.ts";

/** A run with sensible defaults. */
export function aRun(over: Partial<Run> = {}): Run {
  return {
    id: "r-1",
    job_id: "j-1",
    attempt: 1,
    project: "p",
    experiment: "e",
    name: "bert",
    source: "job",
    status: "RUNNING",
    step: null,
    epoch: null,
    max_steps: null,
    config: {},
    env: {},
    node_id: null,
    dropped_points: 0,
    created_at: "2026-01-01T00:00:00.000Z",
    started_at: "2026-01-01T00:00:00.000Z",
    finished_at: null,
    primary_metric: null,
    parent_run: null,
    resume_from: null,
    mark: null,
    ...over,
  };
}

/** A window of `values` at steps `firstStep, firstStep + every, …`, one step per `secondsPerStep`. */
export function aWindow(
  key: string,
  values: number[],
  opts: { firstStep?: number; every?: number; t0?: number; secondsPerStep?: number } = {},
): SeriesWindow {
  const first = opts.firstStep ?? 0;
  const every = opts.every ?? 1;
  const t0 = opts.t0 ?? 1_700_000_000;
  const sps = opts.secondsPerStep ?? 0.1;
  const steps = values.map((_, i) => first + i * every);
  return { key, steps, values, wall_times: steps.map((s) => t0 + (s - first) * sps) };
}

/** A key summary. */
export function aSummary(key: string, over: Partial<KeySummary> = {}): KeySummary {
  return {
    key,
    points: 10,
    first_step: 0,
    last_step: 9,
    last_value: 1,
    last_wall_time: 1_700_000_000,
    min_value: 1,
    min_step: 9,
    max_value: 1,
    max_step: 0,
    ...over,
  };
}

/** A checkpoint of run `r-1`. */
export function aCheckpoint(
  id: string,
  step: number | null,
  over: Partial<Checkpoint> = {},
): Checkpoint {
  return {
    id,
    run_id: "r-1",
    step,
    epoch: null,
    path: `/ckpt/${id}`,
    size_bytes: null,
    mtime: null,
    metrics: {},
    created_at: "2026-01-01T00:00:00.000Z",
    overwritten: false,
    overwritten_by_run: null,
    state: "valid",
    problem: null,
    gone_at: null,
    fingerprint: null,
    ...over,
  };
}

/** A COMPLETED evaluation of a checkpoint. */
export function anEvaluation(
  checkpointId: string,
  suite: string,
  metrics: Record<string, unknown>,
  over: Partial<Evaluation> = {},
): Evaluation {
  return {
    id: `ev-${checkpointId}-${suite}`,
    checkpoint_id: checkpointId,
    job_id: null,
    suite,
    status: "COMPLETED",
    metrics,
    duration_s: 10,
    created_at: "2026-01-02T00:00:00.000Z",
    finished_at: "2026-01-02T00:01:00.000Z",
    ...over,
  };
}
