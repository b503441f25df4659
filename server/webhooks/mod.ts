/**
 * Webhooks: events from the bus, filtered per hook by severity and type, formatted for ntfy,
 * Bark, Slack, Discord or as signed JSON, and delivered in the background with timeouts,
 * retries and a bounded queue, so a slow receiver never holds up the server.
 *
 * @example Wiring at the entry point
 * ```ts ignore
 * const hooks = resolveWebhooks(config.raw.webhooks);
 * const webhooks = new WebhookDispatcher({ hooks, bus, log, consoleUrl });
 * webhooks.start();
 * // on shutdown
 * await webhooks.stop();
 * ```
 *
 * @module
 */

export type {
  /** A webhook with every field filled in. */
  ResolvedWebhook,
  /** One of the receiver kinds. */
  WebhookKind,
  /** One `server.yaml` `webhooks:` entry as written. */
  WebhookOptions,
} from "./webhook_config.ts";
export {
  /** The least severe event a hook is sent unless it says otherwise: "warning". */
  DEFAULT_MIN_SEVERITY,
  /** Validates the raw `webhooks:` list and fills in defaults; errors name the field. */
  resolveWebhooks,
  /** The receiver kinds gpuctl formats for. */
  WEBHOOK_KINDS,
  /** The zod schema of the `webhooks:` list. */
  webhookConfig,
} from "./webhook_config.ts";

/** Whether a hook wants an event: severity at least its minimum, type allowed. */
export { shouldDeliver } from "./should_deliver.ts";

export type {
  /** Formatting's optional inputs: the console URL and the clock. */
  FormatOptions,
  /** One HTTP request to a receiver, before it is sent. */
  WebhookRequest,
} from "./format_webhook.ts";
export {
  /** The Discord embed colour of each severity. */
  DISCORD_COLOR,
  /** The request that tells a hook about an event, shaped for its kind; pure. */
  formatWebhook,
} from "./format_webhook.ts";

export type {
  /** How `verifySignature` judges the timestamp. */
  VerifyOptions,
} from "./signature.ts";
export {
  /** The signature header of signed `json` hooks. */
  SIGNATURE_HEADER,
  /** Seconds a signature's timestamp may lie from the receiver's clock: 300. */
  SIGNATURE_TOLERANCE_S,
  /** `sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>`. */
  signBody,
  /** The timestamp header of signed `json` hooks. */
  TIMESTAMP_HEADER,
  /** For receivers: checks a signed `json` request in constant time. */
  verifySignature,
} from "./signature.ts";

export type {
  /** Delivered, failed and dropped events since the last `runOnce()`. */
  DeliveryCounts,
  /** The dispatcher's settings. */
  WebhookDispatcherOptions,
} from "./webhook_dispatcher.ts";
export {
  /** Waits before the retries: [1000, 4000, 16000] ms. */
  DEFAULT_BACKOFF_MS,
  /** Events waiting per hook before the oldest is dropped: 1000. */
  DEFAULT_MAX_QUEUE,
  /** Retries after the first attempt: 3. */
  DEFAULT_RETRIES,
  /** Milliseconds one request may take: 5000. */
  DEFAULT_TIMEOUT_MS,
  /** Delivers the bus's events to webhooks in the background. */
  WebhookDispatcher,
} from "./webhook_dispatcher.ts";
