/** Events and dispatchers for the webhook tests. */
import type { EventRecord } from "../../protocol/objects.ts";
import { Bus } from "../bus/bus.ts";
import { memoryLogger } from "../log.ts";
import { resolveWebhooks, type WebhookOptions } from "./webhook_config.ts";
import { WebhookDispatcher, type WebhookDispatcherOptions } from "./webhook_dispatcher.ts";

let nextId = 1;

/** A critical LOSS_NAN of run r-123 unless told otherwise; ids count up. */
export function event(over: Partial<EventRecord> = {}): EventRecord {
  return {
    id: nextId++,
    ts: "2026-03-01T11:59:58.000Z",
    type: "LOSS_NAN",
    severity: "critical",
    run_id: "r-123",
    job_id: "j-9",
    node_id: "gpu-3",
    message: 'Loss "loss" is NaN at step 1200',
    data: { key: "loss", step: 1200 },
    ...over,
  };
}

/** A bus, a memory log and a dispatcher over the hooks, with test-sized timings. */
export function setup(
  hooks: WebhookOptions[],
  opts: Partial<WebhookDispatcherOptions> = {},
) {
  const bus = new Bus();
  const log = memoryLogger();
  const dispatcher = new WebhookDispatcher({
    hooks: resolveWebhooks(hooks),
    bus,
    log,
    timeoutMs: 1000,
    backoffMs: [5, 10, 20],
    ...opts,
  });
  dispatcher.start();
  return { bus, log, dispatcher };
}
