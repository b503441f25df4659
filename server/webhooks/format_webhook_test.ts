import { assert, assertEquals } from "../../tests/assert.ts";
import type { EventRecord } from "../../protocol/objects.ts";
import type { Severity } from "../../protocol/vocabulary.ts";
import { DISCORD_COLOR, formatWebhook } from "./format_webhook.ts";
import { verifySignature } from "./signature.ts";
import { event as fixtureEvent } from "./_fixtures.ts";
import type { ResolvedWebhook, WebhookKind } from "./webhook_config.ts";

const CONSOLE = "https://gpu.example.com";
const now = new Date("2026-03-01T12:00:00Z");

/** The fixture event with a fixed id, so two calls give equal events. */
function event(over: Partial<EventRecord> = {}): EventRecord {
  return fixtureEvent({ id: 42, ...over });
}

function hook(kind: WebhookKind, url: string, secret: string | null = null): ResolvedWebhook {
  return { url, kind, minSeverity: "warning", types: null, secret };
}

const ntfyHook = hook("ntfy", "https://ntfy.sh/gpu-alerts");

Deno.test("formatWebhook() ntfy posts the message with title, priority and tags headers", () => {
  const req = formatWebhook(ntfyHook, event(), { consoleUrl: CONSOLE });
  assertEquals(req.method, "POST");
  assertEquals(req.url, "https://ntfy.sh/gpu-alerts");
  assertEquals(req.body, 'Loss "loss" is NaN at step 1200\nrun r-123');
  assertEquals(req.headers.Title, "gpuctl: LOSS_NAN");
  assertEquals(req.headers.Priority, "5");
  assertEquals(req.headers.Tags, "rotating_light,loss_nan");
  assertEquals(req.headers.Click, "https://gpu.example.com/runs/r-123");
});

Deno.test("formatWebhook() ntfy maps severity to priority and tag", () => {
  const cases: [Severity, string, string][] = [
    ["critical", "5", "rotating_light,loss_spike"],
    ["warning", "4", "warning,loss_spike"],
    ["info", "3", "information_source,loss_spike"],
  ];
  for (const [severity, priority, tags] of cases) {
    const req = formatWebhook(ntfyHook, event({ severity, type: "LOSS_SPIKE" }));
    assertEquals([req.headers.Priority, req.headers.Tags], [priority, tags], severity);
  }
});

Deno.test("formatWebhook() ntfy leaves Click out when the console or the run is unknown", () => {
  assertEquals(formatWebhook(ntfyHook, event()).headers.Click, undefined);
  const nodeEvent = event({ type: "NODE_OFFLINE", run_id: null, job_id: null });
  const req = formatWebhook(ntfyHook, nodeEvent, { consoleUrl: CONSOLE });
  assertEquals(req.headers.Click, undefined);
  assertEquals(req.body, 'Loss "loss" is NaN at step 1200\nnode gpu-3');
});

Deno.test("formatWebhook() ntfy keeps every header value printable ASCII", () => {
  const req = formatWebhook(ntfyHook, event({ type: "DISK_LOW ✗ über\r\nX-Evil: 1" }), {
    consoleUrl: "https://bücher.example/",
  });
  for (const [name, value] of Object.entries(req.headers)) {
    assert(/^[\x20-\x7e]*$/.test(value), `${name}: ${JSON.stringify(value)}`);
  }
  // The title is an RFC 2047 encoded word that ntfy decodes back to the UTF-8 text.
  const m = /^=\?UTF-8\?B\?(.+)\?=$/.exec(req.headers.Title);
  assert(m, req.headers.Title);
  const decoded = new TextDecoder().decode(Uint8Array.from(atob(m[1]), (c) => c.charCodeAt(0)));
  assertEquals(decoded, "gpuctl: DISK_LOW ✗ über X-Evil: 1");
  assertEquals(req.headers.Tags, "rotating_light,disk_low_ber_x-evil_1");
  assertEquals(req.headers.Click, "https://xn--bcher-kva.example/runs/r-123");
});

Deno.test("formatWebhook() ntfy cuts a long message to ntfy's 4096-byte limit", () => {
  const req = formatWebhook(ntfyHook, event({ message: "é".repeat(5000) }));
  const bytes = new TextEncoder().encode(req.body!).length;
  assert(bytes <= 4096 && bytes > 4000, `${bytes} bytes`);
  assert(req.body!.endsWith("…"));
});

Deno.test("formatWebhook() bark GETs <base>/<title>/<body> with group and level", () => {
  const bark = hook("bark", "https://api.day.app/DEVICEKEY/");
  const req = formatWebhook(bark, event(), { consoleUrl: CONSOLE });
  assertEquals(req.method, "GET");
  assertEquals(req.body, null);
  const url = new URL(req.url);
  assertEquals(
    url.pathname,
    "/DEVICEKEY/gpuctl%3A%20LOSS_NAN/Loss%20%22loss%22%20is%20NaN%20at%20step%201200%0Arun%20r-123",
  );
  assertEquals(url.searchParams.get("group"), "gpuctl");
  assertEquals(url.searchParams.get("level"), "timeSensitive");
  assertEquals(url.searchParams.get("url"), "https://gpu.example.com/runs/r-123");
});

Deno.test("formatWebhook() bark maps severity to level and keeps the base's own query", () => {
  const bark = hook("bark", "https://api.day.app/KEY?sound=alarm");
  const cases: [Severity, string][] = [
    ["critical", "timeSensitive"],
    ["warning", "active"],
    ["info", "passive"],
  ];
  for (const [severity, level] of cases) {
    const url = new URL(formatWebhook(bark, event({ severity })).url);
    assertEquals(url.searchParams.get("level"), level);
    assertEquals(url.searchParams.get("sound"), "alarm");
    assertEquals(url.searchParams.get("url"), null);
  }
});

Deno.test("formatWebhook() bark encodes slashes in the text so the path keeps three parts", () => {
  const url = new URL(
    formatWebhook(
      hook("bark", "https://b.example/K"),
      event({
        message: "disk /data at 97%",
      }),
    ).url,
  );
  const parts = url.pathname.split("/");
  assertEquals(parts.length, 4);
  assertEquals(decodeURIComponent(parts[3]), "disk /data at 97%\nrun r-123");
});

Deno.test("formatWebhook() slack posts a short mrkdwn text, with a link block when known", () => {
  const slack = hook("slack", "https://hooks.slack.com/services/T/B/X");
  const plain = formatWebhook(slack, event());
  assertEquals(plain.method, "POST");
  assertEquals(plain.headers["Content-Type"], "application/json");
  assertEquals(JSON.parse(plain.body!), {
    text: '*LOSS_NAN* (critical) run r-123: Loss "loss" is NaN at step 1200',
  });
  const linked = JSON.parse(formatWebhook(slack, event(), { consoleUrl: CONSOLE }).body!);
  assertEquals(linked.blocks[0], { type: "section", text: { type: "mrkdwn", text: linked.text } });
  assertEquals(
    linked.blocks[1].elements[0].text,
    "<https://gpu.example.com/runs/r-123|Open run r-123>",
  );
});

Deno.test("formatWebhook() slack escapes &, < and > so a message cannot ping or link", () => {
  const slack = hook("slack", "https://hooks.slack.com/services/T/B/X");
  const body = JSON.parse(formatWebhook(slack, event({ message: "<!channel> a & b" })).body!);
  assertEquals(body.text, "*LOSS_NAN* (critical) run r-123: &lt;!channel&gt; a &amp; b");
});

Deno.test("formatWebhook() discord posts content and one embed coloured by severity", () => {
  const discord = hook("discord", "https://discord.com/api/webhooks/1/TOKEN");
  const body = JSON.parse(formatWebhook(discord, event(), { consoleUrl: CONSOLE }).body!);
  assertEquals(body.content, '**LOSS_NAN** (critical) run r-123: Loss "loss" is NaN at step 1200');
  assertEquals(body.allowed_mentions, { parse: [] });
  assertEquals(body.embeds.length, 1);
  const [embed] = body.embeds;
  assertEquals(embed.title, "gpuctl: LOSS_NAN");
  assertEquals(embed.color, DISCORD_COLOR.critical);
  assertEquals(embed.timestamp, "2026-03-01T11:59:58.000Z");
  assertEquals(embed.url, "https://gpu.example.com/runs/r-123");
  assert(embed.description.startsWith('Loss "loss" is NaN at step 1200\n```json\n'));
  const colors = (["critical", "warning", "info"] as const).map((severity) =>
    JSON.parse(formatWebhook(discord, event({ severity })).body!).embeds[0].color
  );
  assertEquals(new Set(colors).size, 3);
});

Deno.test("formatWebhook() discord keeps content within 2000 and description within 4096", () => {
  const discord = hook("discord", "https://discord.com/api/webhooks/1/TOKEN");
  const body = JSON.parse(formatWebhook(discord, event({ message: "😀".repeat(3000) })).body!);
  assertEquals(body.content.length, 2000);
  assert(body.content.endsWith("…"));
  assert(body.embeds[0].description.length <= 4096);
  // Cut between code points, never inside a surrogate pair.
  assert(!/[\ud800-\udbff]…$/.test(body.embeds[0].description));
  assert(!/[\ud800-\udbff]…$/.test(body.content));
});

Deno.test("formatWebhook() json posts the event itself, unsigned without a secret", () => {
  const req = formatWebhook(hook("json", "https://example.com/hook"), event(), { now });
  assertEquals(req.method, "POST");
  assertEquals(JSON.parse(req.body!), event());
  assertEquals(req.headers["X-Gpuctl-Event-Id"], "42");
  assertEquals(req.headers["X-Gpuctl-Signature"], undefined);
  assertEquals(req.headers["X-Gpuctl-Timestamp"], undefined);
});

Deno.test("formatWebhook() json signs '<timestamp>.<body>' when the hook has a secret", () => {
  const req = formatWebhook(hook("json", "https://example.com/hook", "s3cret"), event(), { now });
  const ts = req.headers["X-Gpuctl-Timestamp"];
  assertEquals(ts, String(now.getTime() / 1000));
  const sig = req.headers["X-Gpuctl-Signature"];
  assert(/^sha256=[0-9a-f]{64}$/.test(sig), sig);
  assertEquals(verifySignature("s3cret", ts, req.body!, sig, { now }), true);
  assertEquals(verifySignature("wrong", ts, req.body!, sig, { now }), false);
});
