/**
 * An agent frame checked against the wire schema (`agentFrame`), with a hand-written check for
 * the points of a metrics frame, the one array that grows with load: zod builds and checks
 * objects at about 2 µs a point, this plain loop a tenth of that. The hand check accepts only
 * what the schema accepts and gives the same value (points with a number value, plain JSON
 * fields); anything else — a string value such as "NaN", a field too long, an unknown field —
 * is judged by the schema itself, so a bad frame gets the schema's own error.
 */
import { type AgentFrame, agentFrame, metricsFrame } from "../../protocol/agent.ts";
import { MAX_NAME_LENGTH } from "../../protocol/rest/fields.ts";
import { z } from "zod";

/** The metrics frame's fields but its points, which `plainPoints` checks. */
const metricsHead = metricsFrame.extend({ points: z.array(z.never()).max(0) });

const MAX_POINTS = 50_000;

/** Whether every point is one the schema accepts as it is (no value to convert). */
function plainPoints(points: unknown): boolean {
  if (!Array.isArray(points) || points.length === 0 || points.length > MAX_POINTS) return false;
  for (let i = 0; i < points.length; i++) {
    const p = points[i];
    if (typeof p !== "object" || p === null || Array.isArray(p)) return false;
    let fields = 0;
    for (const f in p) {
      if (f !== "key" && f !== "step" && f !== "value" && f !== "wall_time") return false;
      fields++;
    }
    const { key, step, value, wall_time: wallTime } = p as Record<string, unknown>;
    if (typeof key !== "string" || key.length === 0 || key.length > MAX_NAME_LENGTH) return false;
    if (typeof step !== "number" || !Number.isSafeInteger(step) || step < 0) return false;
    if (typeof value !== "number" || !Number.isFinite(value)) return false;
    if (wallTime === undefined) {
      if (fields !== 3) return false;
    } else if (typeof wallTime !== "number" || !Number.isFinite(wallTime) || wallTime < 0) {
      return false;
    }
  }
  return true;
}

/** `agentFrame.safeParse` of a parsed JSON value, the points of a metrics frame checked by hand. */
export function parseAgentFrame(
  value: unknown,
): { success: true; data: AgentFrame } | { success: false; error: z.ZodError } {
  if (
    typeof value === "object" && value !== null && (value as { type?: unknown }).type === "metrics"
  ) {
    const points = (value as { points?: unknown }).points;
    if (plainPoints(points)) {
      const head = metricsHead.safeParse({ ...value, points: [] });
      if (head.success) {
        return { success: true, data: { ...head.data, points } as AgentFrame };
      }
    }
  }
  return agentFrame.safeParse(value);
}
