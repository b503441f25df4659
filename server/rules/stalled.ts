/** STALLED: a run produced no metric point or log line for `stalledAfterS`; once per silence. */
import { fmtMinutes } from "./_format.ts";
import type { ResolvedRulesConfig } from "./rules_config.ts";
import type { RuleEvent } from "./rule_event.ts";

/** When a run last showed life, and whether STALLED already fired for that silence. */
export interface StalledState {
  /** Unix seconds of the newest metric point or log line; never moves back. */
  lastActivityAt: number | null;
  /** The run's start, the reference while nothing was produced yet. */
  startedAt: number | null;
  /** The reference time STALLED fired for; newer activity re-arms the rule. */
  firedFor: number | null;
}

/** A fresh STALLED state. */
export function createStalledState(startedAt: number | null = null): StalledState {
  return { lastActivityAt: null, startedAt, firedFor: null };
}

/** Records a metric point or log line produced at `ts` (Unix seconds). */
export function recordActivity(state: StalledState, ts: number): void {
  if (!Number.isFinite(ts)) return;
  if (state.lastActivityAt === null || ts > state.lastActivityAt) state.lastActivityAt = ts;
  if (state.firedFor !== null && state.lastActivityAt > state.firedFor) state.firedFor = null;
}

/**
 * STALLED when nothing was produced for `stalledAfterS` seconds since the last activity (or
 * the start, when nothing was produced yet); once per silence.
 */
export function checkStalled(
  state: StalledState,
  now: number,
  cfg: ResolvedRulesConfig,
): RuleEvent | null {
  const since = state.lastActivityAt ?? state.startedAt;
  if (since === null || state.firedFor !== null) return null;
  const idle = now - since;
  if (idle < cfg.stalledAfterS) return null;
  state.firedFor = since;
  const what = state.lastActivityAt === null
    ? "has produced no metric and no log line since it started"
    : "produced no metric and no log line";
  return {
    type: "STALLED",
    severity: "warning",
    message: `The run ${what} for ${fmtMinutes(Math.round(idle))} minutes (threshold ` +
      `${fmtMinutes(cfg.stalledAfterS)}): it may hang in a collective, a data loader or I/O`,
    data: {
      idle_s: idle,
      last_activity_at: state.lastActivityAt,
      threshold_s: cfg.stalledAfterS,
    },
  };
}
