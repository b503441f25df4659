/**
 * `formatWebhook`: the HTTP request that tells a hook of an event, shaped for its kind (ntfy,
 * Bark, Slack, Discord, signed JSON) and cut to the receiver's limits.
 */
import type { EventRecord } from "../../protocol/objects.ts";
import type { Severity } from "../../protocol/vocabulary.ts";
import { asciiHeader, runLink, subjectOf, truncate, truncateUtf8 } from "./_text.ts";
import { SIGNATURE_HEADER, signBody, TIMESTAMP_HEADER } from "./signature.ts";
import type { ResolvedWebhook } from "./webhook_config.ts";

/** One HTTP request to a webhook receiver, before it is sent. */
export interface WebhookRequest {
  url: string;
  method: "GET" | "POST";
  headers: Record<string, string>;
  /** `null` for GET. */
  body: string | null;
}

/** What formatting needs besides the hook and the event; both fields optional. */
export interface FormatOptions {
  /** The console's base URL; with it, notifications link to the event's run. @default none */
  consoleUrl?: string;
  /** The clock a `json` signature's timestamp is read from. @default the current time */
  now?: Date;
}

/** The `User-Agent` of every webhook request. */
export const USER_AGENT = "gpuctl-webhooks";

// Receivers' own limits (https://docs.ntfy.sh/publish/#limitations, Slack's section block,
// https://discord.com/developers/docs/resources/message#embed-object-embed-limits). Bark
// carries the text in the URL path, so it is kept well below common URL limits.
const NTFY_MAX_BODY_BYTES = 4096;
const BARK_MAX_BODY = 1000;
const SLACK_MAX_TEXT = 3000;
const DISCORD_MAX_CONTENT = 2000;
const DISCORD_MAX_TITLE = 256;
const DISCORD_MAX_DESCRIPTION = 4096;
const MAX_TITLE = 200;

const NTFY_PRIORITY: Record<Severity, string> = { critical: "5", warning: "4", info: "3" };
const NTFY_TAG: Record<Severity, string> = {
  critical: "rotating_light",
  warning: "warning",
  info: "information_source",
};
const BARK_LEVEL: Record<Severity, string> = {
  critical: "timeSensitive",
  warning: "active",
  info: "passive",
};
/** Discord embed colours: red, orange, blue. */
export const DISCORD_COLOR: Record<Severity, number> = {
  critical: 0xe53935,
  warning: 0xfb8c00,
  info: 0x1e88e5,
};

/**
 * The request that tells `hook` about `event`, shaped for the hook's kind. Pure: no I/O, and
 * the clock is read only for a signed `json` hook's timestamp.
 */
export function formatWebhook(
  hook: Pick<ResolvedWebhook, "url" | "kind" | "secret">,
  event: EventRecord,
  opts: FormatOptions = {},
): WebhookRequest {
  switch (hook.kind) {
    case "ntfy":
      return ntfy(hook.url, event, opts.consoleUrl);
    case "bark":
      return bark(hook.url, event, opts.consoleUrl);
    case "slack":
      return slack(hook.url, event, opts.consoleUrl);
    case "discord":
      return discord(hook.url, event, opts.consoleUrl);
    case "json":
      return json(hook.url, hook.secret, event, opts.now ?? new Date());
  }
}

function title(event: EventRecord): string {
  return truncate(`gpuctl: ${event.type}`, MAX_TITLE);
}

/** The message, then what it is about on a line of its own (rule messages name no run). */
function plainText(event: EventRecord): string {
  return [event.message || event.type, subjectOf(event)].filter(Boolean).join("\n");
}

/** https://docs.ntfy.sh/publish/: the message is the body, the rest travels in headers. */
function ntfy(url: string, event: EventRecord, consoleUrl?: string): WebhookRequest {
  const tag = event.type.toLowerCase().replace(/[^a-z0-9_-]+/g, "_");
  const headers: Record<string, string> = {
    "Content-Type": "text/plain; charset=utf-8",
    "User-Agent": USER_AGENT,
    Title: asciiHeader(title(event)),
    Priority: NTFY_PRIORITY[event.severity] ?? NTFY_PRIORITY.critical,
    Tags: `${NTFY_TAG[event.severity] ?? NTFY_TAG.critical},${tag}`,
  };
  const link = runLink(event, consoleUrl);
  if (link) headers.Click = link;
  return {
    url,
    method: "POST",
    headers,
    body: truncateUtf8(plainText(event), NTFY_MAX_BODY_BYTES),
  };
}

/** https://github.com/Finb/bark-server: `GET <base>/<title>/<body>?…`, each part URL-encoded. */
function bark(base: string, event: EventRecord, consoleUrl?: string): WebhookRequest {
  const url = new URL(base);
  // Query parameters already on the base (a sound, an icon) are kept.
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/${encodeURIComponent(title(event))}/` +
    encodeURIComponent(truncate(plainText(event), BARK_MAX_BODY));
  url.searchParams.set("group", "gpuctl");
  url.searchParams.set("level", BARK_LEVEL[event.severity] ?? BARK_LEVEL.critical);
  const link = runLink(event, consoleUrl);
  if (link) url.searchParams.set("url", link);
  return { url: url.href, method: "GET", headers: { "User-Agent": USER_AGENT }, body: null };
}

/** The one-line summary Slack and Discord show: `*LOSS_NAN* (critical) run r-1: message`. */
function summary(event: EventRecord, bold: (s: string) => string): string {
  const subject = subjectOf(event);
  const head = `${bold(event.type)} (${event.severity})${subject ? ` ${subject}` : ""}`;
  return event.message ? `${head}: ${event.message}` : head;
}

// https://api.slack.com/reference/surfaces/formatting#escaping: only these three, so a
// message cannot forge a link or an @channel.
function slackEscape(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** A Slack incoming webhook: `{text}`, plus blocks with a link when the run's page is known. */
function slack(url: string, event: EventRecord, consoleUrl?: string): WebhookRequest {
  const text = truncate(slackEscape(summary(event, (s) => `*${s}*`)), SLACK_MAX_TEXT);
  const payload: Record<string, unknown> = { text };
  const link = runLink(event, consoleUrl);
  if (link) {
    payload.blocks = [
      { type: "section", text: { type: "mrkdwn", text } },
      {
        type: "context",
        elements: [{ type: "mrkdwn", text: `<${link}|Open ${slackEscape(subjectOf(event))}>` }],
      },
    ];
  }
  return jsonPost(url, payload);
}

/** A Discord incoming webhook: a summary line and an embed coloured by severity. */
function discord(url: string, event: EventRecord, consoleUrl?: string): WebhookRequest {
  const embed: Record<string, unknown> = {
    title: truncate(title(event), DISCORD_MAX_TITLE),
    description: discordDescription(event),
    color: DISCORD_COLOR[event.severity] ?? DISCORD_COLOR.critical,
    timestamp: event.ts,
  };
  const link = runLink(event, consoleUrl);
  if (link) embed.url = link;
  return jsonPost(url, {
    content: truncate(summary(event, (s) => `**${s}**`), DISCORD_MAX_CONTENT),
    embeds: [embed],
    // A message quoting "@everyone" must not ping anybody.
    allowed_mentions: { parse: [] },
  });
}

/** The message, and the event's data as a JSON block when the whole block fits. */
function discordDescription(event: EventRecord): string {
  const message = truncate(event.message || event.type, DISCORD_MAX_DESCRIPTION);
  if (Object.keys(event.data ?? {}).length === 0) return message;
  const withData = `${message}\n\`\`\`json\n${JSON.stringify(event.data, null, 2)}\n\`\`\``;
  return withData.length <= DISCORD_MAX_DESCRIPTION ? withData : message;
}

/** The event object as JSON, signed when the hook has a secret. */
function json(url: string, secret: string | null, event: EventRecord, now: Date): WebhookRequest {
  const body = JSON.stringify(event);
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    "User-Agent": USER_AGENT,
    "X-Gpuctl-Event": asciiHeader(event.type),
    // Lets a receiver drop the duplicate a retry after a lost response produces.
    "X-Gpuctl-Event-Id": String(event.id),
  };
  if (secret !== null) {
    const timestamp = Math.floor(now.getTime() / 1000);
    headers[TIMESTAMP_HEADER] = String(timestamp);
    headers[SIGNATURE_HEADER] = signBody(secret, timestamp, body);
  }
  return { url, method: "POST", headers, body };
}

function jsonPost(url: string, payload: unknown): WebhookRequest {
  return {
    url,
    method: "POST",
    headers: { "Content-Type": "application/json", "User-Agent": USER_AGENT },
    body: JSON.stringify(payload),
  };
}
