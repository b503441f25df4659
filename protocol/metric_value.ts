/**
 * The one codec of metric values on every wire (agent frames, SDK batches, REST answers):
 * JSON has no NaN or ±Infinity, so those travel as the strings "NaN", "Infinity" and
 * "-Infinity", and every other value as its number.
 */
import { z } from "zod";

/** A metric value as JSON carries it. */
export type WireMetricValue = number | "NaN" | "Infinity" | "-Infinity";

/** `NaN` → `"NaN"`, `±Infinity` → `"±Infinity"`, a finite number unchanged. */
export function encodeMetricValue(value: number): WireMetricValue {
  if (Number.isFinite(value)) return value;
  if (Number.isNaN(value)) return "NaN";
  return value > 0 ? "Infinity" : "-Infinity";
}

/** A value as JSON carried it back to a number; null for anything that is not a metric value. */
export function decodeMetricValue(value: unknown): number | null {
  if (typeof value === "number") return value;
  if (value === "NaN" || value === "Infinity" || value === "-Infinity") return Number(value);
  return null;
}

/** The schema of a metric value: a number, or NaN/±Infinity spelled as JSON strings. */
export const metricValue = z.union([
  z.number(),
  z.enum(["NaN", "Infinity", "-Infinity"]),
]).transform((v) => typeof v === "number" ? v : Number(v));
