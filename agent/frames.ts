/**
 * The agent's view of the wire: data frames as they are written (the zod *input* types, so
 * NaN travels as the string "NaN"), and small pure helpers that build them.
 */
import type { z } from "zod";
import type { agentFrame } from "../protocol/agent.ts";
import type { StreamName } from "../protocol/agent.ts";
import type { WireMetricValue } from "../protocol/metric_value.ts";

type AnyFrameIn = z.input<typeof agentFrame>;

/** A data frame on the wire, seq included. */
export type WireDataFrame = Exclude<AnyFrameIn, { type: "hello" } | { type: "heartbeat" }>;

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A data frame before the spool numbers it. */
export type NewDataFrame = DistributiveOmit<WireDataFrame, "seq">;

/** Which attempt a frame belongs to. */
export interface AttemptRef {
  job_id: string;
  attempt: number;
  run_id: string;
}

/** One metric point as a frame carries it. */
export interface WirePoint {
  key: string;
  step: number;
  value: WireMetricValue;
  wall_time?: number;
}

/** The most points one metrics frame carries (the protocol allows 50,000). */
export const MAX_POINTS_PER_FRAME = 10_000;

/** `metrics` frames for `points`, split so none exceeds {@linkcode MAX_POINTS_PER_FRAME}. */
export function metricsFrames(
  ref: AttemptRef,
  stream: StreamName,
  points: WirePoint[],
): NewDataFrame[] {
  const frames: NewDataFrame[] = [];
  for (let i = 0; i < points.length; i += MAX_POINTS_PER_FRAME) {
    frames.push({
      type: "metrics",
      stream,
      job_id: ref.job_id,
      attempt: ref.attempt,
      run_id: ref.run_id,
      points: points.slice(i, i + MAX_POINTS_PER_FRAME),
    });
  }
  return frames;
}

/** Cuts `text` to at most `max` characters (frames have per-field limits). */
export function clip(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max);
}
