import type { EventRecord } from "../../protocol/objects.ts";
import type { Severity } from "../../protocol/rest.ts";
import type { ResolvedWebhook } from "./webhook_config.ts";

const RANK: Record<Severity, number> = { info: 0, warning: 1, critical: 2 };

/** Whether `hook` wants `event`: at least its minimum severity, and an allowed type. */
export function shouldDeliver(
  hook: Pick<ResolvedWebhook, "minSeverity" | "types">,
  event: Pick<EventRecord, "severity" | "type">,
): boolean {
  // An unknown severity (a newer server's event replayed here) ranks as the most severe,
  // so it is sent rather than silently lost.
  const rank = RANK[event.severity] ?? RANK.critical;
  if (rank < RANK[hook.minSeverity]) return false;
  return hook.types === null || hook.types.includes(event.type);
}
