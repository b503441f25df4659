/**
 * The order of event severities, in one place for everything that filters or sorts by it
 * (event lists and streams, webhooks, rules, the console). A severity this code does not know
 * (an event from a newer server or agent) ranks as the most severe: a filter then shows it,
 * and a webhook sends it, rather than losing it in silence.
 */
import { SEVERITIES, type Severity } from "./vocabulary.ts";

const RANK: Readonly<Record<string, number>> = Object.fromEntries(
  SEVERITIES.map((s, i) => [s, i]),
);
const MOST_SEVERE = SEVERITIES.length - 1;

/** 0 for info, 1 for warning, 2 for critical; an unknown severity ranks as critical. */
export function severityRank(severity: string): number {
  return Object.hasOwn(RANK, severity) ? RANK[severity] : MOST_SEVERE;
}

/** Whether `severity` is at least as severe as `min`. */
export function atLeast(severity: string, min: Severity): boolean {
  return severityRank(severity) >= severityRank(min);
}

/** Sort order, least severe first: `compareSeverity("info", "critical") < 0`. */
export function compareSeverity(a: string, b: string): number {
  return severityRank(a) - severityRank(b);
}

/** The known severities at least as severe as `min`, least severe first. */
export function severitiesAtLeast(min: Severity): Severity[] {
  return SEVERITIES.filter((s) => atLeast(s, min));
}
