import { assertEquals, assertStringIncludes, assertThrows } from "../../tests/assert.ts";
import { DEFAULT_MIN_SEVERITY, resolveWebhooks } from "./webhook_config.ts";

Deno.test("resolveWebhooks() fills in min_severity and leaves types and secret unset", () => {
  assertEquals(resolveWebhooks([{ url: "https://ntfy.sh/gpu-alerts", kind: "ntfy" }]), [
    {
      url: "https://ntfy.sh/gpu-alerts",
      kind: "ntfy",
      minSeverity: DEFAULT_MIN_SEVERITY,
      types: null,
      secret: null,
    },
  ]);
  assertEquals(DEFAULT_MIN_SEVERITY, "warning");
});

Deno.test("resolveWebhooks() keeps the fields given", () => {
  const [hook] = resolveWebhooks([{
    url: "http://127.0.0.1:9000/hook",
    kind: "json",
    min_severity: "info",
    types: ["LOSS_NAN", "RUN_FAILED"],
    secret: "s3cret",
  }]);
  assertEquals(hook, {
    url: "http://127.0.0.1:9000/hook",
    kind: "json",
    minSeverity: "info",
    types: ["LOSS_NAN", "RUN_FAILED"],
    secret: "s3cret",
  });
});

Deno.test("resolveWebhooks() treats a missing list as no webhooks", () => {
  assertEquals(resolveWebhooks(undefined), []);
  assertEquals(resolveWebhooks(null), []);
  assertEquals(resolveWebhooks([]), []);
});

Deno.test("resolveWebhooks() rejects bad entries with an error naming the field", () => {
  const ok = { url: "https://example.com/h", kind: "json" };
  const cases: [unknown, string][] = [
    [{ webhooks: [] }, "webhooks:"],
    [[{ ...ok, url: "not a url" }], "webhooks.0.url: is not a valid URL"],
    [
      [ok, { ...ok, url: "ftp://example.com/x" }],
      'webhooks.1.url: must be an http:// or https:// URL, got scheme "ftp:"',
    ],
    [[{ ...ok, url: "" }], "webhooks.0.url: must not be empty"],
    [[{ url: "https://example.com" }], "webhooks.0.kind:"],
    [[{ ...ok, kind: "teams" }], "webhooks.0.kind:"],
    [[{ ...ok, min_severity: "error" }], "webhooks.0.min_severity:"],
    [[{ ...ok, types: [] }], "webhooks.0.types: must list at least one event type"],
    [[{ ...ok, types: [""] }], "webhooks.0.types.0: must not be empty"],
    [
      [{ ...ok, kind: "ntfy", secret: "x" }],
      'webhooks.0.secret: only the json kind signs requests, this hook is "ntfy"',
    ],
    [[{ ...ok, secrett: "x" }], "webhooks.0:"],
  ];
  for (const [raw, part] of cases) {
    assertThrows(() => resolveWebhooks(raw), part);
  }
});

Deno.test("resolveWebhooks() never quotes the URL back: it may hold a device key", () => {
  const err = assertThrows(() =>
    resolveWebhooks([{ url: "ftp://example.com/DEVICEKEY", kind: "bark" }])
  );
  assertStringIncludes(err.message, "webhooks.0.url");
  assertEquals(err.message.includes("DEVICEKEY"), false);
});
