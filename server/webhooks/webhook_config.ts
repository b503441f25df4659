/** server.yaml's `webhooks:` list: each hook's kind, URL and filters, validated and defaulted. */
import { z } from "zod";
import { SEVERITIES, type Severity } from "../../protocol/vocabulary.ts";

/** The receivers gpuctl knows how to format for. */
export const WEBHOOK_KINDS = ["ntfy", "bark", "slack", "discord", "json"] as const;
/** One of `WEBHOOK_KINDS`. */
export type WebhookKind = typeof WEBHOOK_KINDS[number];

/** Events below this severity are not sent unless a hook says otherwise. */
export const DEFAULT_MIN_SEVERITY: Severity = "warning";

/** One `server.yaml` `webhooks:` entry; every field but `url` and `kind` optional. */
export interface WebhookOptions {
  /** Where to send: an http(s) URL. For Bark, the base including the device key. */
  url: string;
  kind: WebhookKind;
  /** The least severe event sent. @default "warning" (`DEFAULT_MIN_SEVERITY`) */
  min_severity?: Severity;
  /** Only these event types are sent. @default every type */
  types?: string[];
  /** HMAC-SHA256 key signing the body (`json` only). @default unsigned */
  secret?: string;
}

/** A webhook with every field filled in; `null` means "not set". */
export interface ResolvedWebhook {
  url: string;
  kind: WebhookKind;
  minSeverity: Severity;
  /** The allow-list of event types; `null` lets every type through. */
  types: readonly string[] | null;
  /** The signing secret (`json` only); `null` sends unsigned requests. */
  secret: string | null;
}

// The URL is never quoted back in an error: Bark device keys and Slack tokens live in it.
const httpUrl = z.string().min(1, "must not be empty").superRefine((value, ctx) => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    ctx.addIssue({ code: "custom", message: "is not a valid URL" });
    return;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    ctx.addIssue({
      code: "custom",
      message: `must be an http:// or https:// URL, got scheme "${url.protocol}"`,
    });
  }
});

const webhookEntry = z.strictObject({
  url: httpUrl,
  kind: z.enum(WEBHOOK_KINDS),
  min_severity: z.enum(SEVERITIES).optional(),
  types: z.array(z.string().min(1, "must not be empty"))
    .min(1, "must list at least one event type; leave it out to send every type")
    .optional(),
  secret: z.string().min(1, "must not be empty").optional(),
}).superRefine((hook, ctx) => {
  // A secret on another kind would look like signing while signing nothing.
  if (hook.secret !== undefined && hook.kind !== "json") {
    ctx.addIssue({
      code: "custom",
      path: ["secret"],
      message: `only the json kind signs requests, this hook is "${hook.kind}": ` +
        "remove the secret or use kind: json",
    });
  }
});

/** The `server.yaml` `webhooks:` list. */
export const webhookConfig = z.array(webhookEntry);

/**
 * Validates the raw `webhooks:` value of `server.yaml` and fills in the defaults. A missing
 * value means no webhooks; an invalid one throws an error naming each offending field
 * (`webhooks.0.url: is not a valid URL`).
 */
export function resolveWebhooks(raw: unknown): ResolvedWebhook[] {
  if (raw === undefined || raw === null) return [];
  const parsed = webhookConfig.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) =>
      `${["webhooks", ...i.path.map(String)].join(".")}: ${i.message}`
    );
    throw new Error(`Cannot use the webhooks config: ${problems.join("; ")}`);
  }
  return parsed.data.map((h) => ({
    url: h.url,
    kind: h.kind,
    minSeverity: h.min_severity ?? DEFAULT_MIN_SEVERITY,
    types: h.types ? Object.freeze([...h.types]) : null,
    secret: h.secret ?? null,
  }));
}
