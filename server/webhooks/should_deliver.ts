/** Whether a hook wants an event: its severity and type filters. */
import type { EventRecord } from "../../protocol/objects.ts";
import { atLeast } from "../../protocol/severity.ts";
import type { ResolvedWebhook } from "./webhook_config.ts";

/** Whether `hook` wants `event`: at least its minimum severity, and an allowed type. */
export function shouldDeliver(
  hook: Pick<ResolvedWebhook, "minSeverity" | "types">,
  event: Pick<EventRecord, "severity" | "type">,
): boolean {
  // An unknown severity (a newer server's event replayed here) ranks as the most severe
  // (protocol/severity.ts), so it is sent rather than silently lost.
  if (!atLeast(event.severity, hook.minSeverity)) return false;
  return hook.types === null || hook.types.includes(event.type);
}
