/** What a rule decides: the anomaly event it raises, before ids and a timestamp are added. */
import type { Severity } from "../../protocol/vocabulary.ts";

/** The anomaly events the rules raise. */
export type RuleEventType =
  | "LOSS_NAN"
  | "LOSS_SPIKE"
  | "OVERFITTING_SUSPECTED"
  | "GPU_UNDERUTILIZED"
  | "STALLED";

export type { Severity };

/** One decision of a rule; the caller adds ids and a timestamp and stores it. */
export interface RuleEvent {
  type: RuleEventType;
  severity: Severity;
  /** Human and specific, values quoted: `Loss "train/loss" is NaN at step 120`. */
  message: string;
  /** JSON-safe facts behind the message (non-finite numbers are strings: "NaN", "Infinity"). */
  data: Record<string, unknown>;
}

/** One metric point as the store holds it: newest write per `(key, step)` wins. */
export interface MetricPoint {
  key: string;
  step: number;
  value: number;
  /** Unix seconds (float), when the training process produced the point. */
  wall_time: number;
}
