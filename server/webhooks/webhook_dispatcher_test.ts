import { assert, assertEquals, assertStringIncludes, assertThrows } from "../../tests/assert.ts";
import { topics } from "../bus/bus.ts";
import { event, setup } from "./_fixtures.ts";
import { hang, startReceiver } from "./_receiver.ts";
import { redactUrls } from "./webhook_dispatcher.ts";

const ids = (rs: { body: string }[]) => rs.map((r) => JSON.parse(r.body).id);

Deno.test("WebhookDispatcher sends bus events by severity and type, in order", async () => {
  const rx = startReceiver();
  try {
    const { bus, dispatcher } = setup([
      { url: `${rx.url}/default`, kind: "json" },
      { url: `${rx.url}/nan-only`, kind: "json", min_severity: "info", types: ["LOSS_NAN"] },
      { url: `${rx.url}/all`, kind: "json", min_severity: "info" },
    ]);
    const started = event({ type: "RUN_STARTED", severity: "info" });
    const spike = event({ type: "LOSS_SPIKE", severity: "warning" });
    const nan = event({ type: "LOSS_NAN", severity: "critical" });
    for (const e of [started, spike, nan]) bus.publish(topics.events, e);
    assertEquals(await dispatcher.runOnce(), { delivered: 6, failed: 0, dropped: 0 });
    assertEquals(ids(rx.at("/default")), [spike.id, nan.id]);
    assertEquals(ids(rx.at("/nan-only")), [nan.id]);
    assertEquals(ids(rx.at("/all")), [started.id, spike.id, nan.id]);
    // Counts start over after each runOnce().
    assertEquals(await dispatcher.flush(), { delivered: 0, failed: 0, dropped: 0 });
    await dispatcher.stop();
  } finally {
    await rx.close();
  }
});

Deno.test("WebhookDispatcher retries 5xx and 429 and delivers on a later try", async () => {
  const cases: [string, number[]][] = [
    ["500 twice then 200", [500, 500, 200]],
    ["429 then 503 then 200", [429, 503, 200]],
  ];
  for (const [name, statuses] of cases) {
    const rx = startReceiver((_req, n) => new Response(null, { status: statuses[n] ?? 200 }));
    try {
      const { bus, dispatcher, log } = setup([{ url: `${rx.url}/h`, kind: "json" }]);
      bus.publish(topics.events, event());
      assertEquals(await dispatcher.runOnce(), { delivered: 1, failed: 0, dropped: 0 }, name);
      assertEquals(rx.requests.length, 3, name);
      assertEquals(log.lines, [], name);
      await dispatcher.stop();
    } finally {
      await rx.close();
    }
  }
});

Deno.test("WebhookDispatcher does not retry a 400 and logs it without the URL", async () => {
  const rx = startReceiver(() => new Response("bad", { status: 400 }));
  try {
    const { bus, dispatcher, log } = setup([{ url: `${rx.url}/SECRETKEY`, kind: "bark" }]);
    bus.publish(topics.events, event());
    assertEquals(await dispatcher.runOnce(), { delivered: 0, failed: 1, dropped: 0 });
    assertEquals(rx.requests.length, 1);
    assertEquals(log.lines.length, 1);
    assertStringIncludes(log.lines[0], "Webhook delivery failed");
    assertStringIncludes(log.lines[0], `host=${new URL(rx.url).host}`);
    assertStringIncludes(log.lines[0], "reason=HTTP 400");
    assertStringIncludes(log.lines[0], "attempts=1");
    assert(!log.lines[0].includes("SECRETKEY"), log.lines[0]);
    await dispatcher.stop();
  } finally {
    await rx.close();
  }
});

Deno.test("WebhookDispatcher: publish returns before any request starts, and a blocked one holds up nothing", async () => {
  // A transport that answers only when the test says so.
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  let firstCall!: () => void;
  const called = new Promise<void>((resolve) => firstCall = resolve);
  const sent: number[] = [];
  const blocked: typeof fetch = async (_url, init) => {
    sent.push(JSON.parse(String(init?.body)).id);
    firstCall();
    await gate;
    return new Response("ok");
  };
  const { bus, dispatcher } = setup([{ url: "http://127.0.0.1:9/h", kind: "json" }], {
    fetch: blocked,
  });
  const seen: number[] = [];
  bus.subscribe<{ id: number }>(topics.events, (e) => seen.push(e.id));
  const events = [event(), event(), event()];
  for (const e of events) bus.publish(topics.events, e);
  // Every publish returned and reached the other subscriber; not one request was even begun.
  assertEquals(seen, events.map((e) => e.id));
  assertEquals(sent, []);
  await called;
  // The first request hangs; the others wait behind it, in order.
  assertEquals(sent, [events[0].id]);
  bus.publish(topics.events, event());
  assertEquals(seen.length, 4);
  release();
  assertEquals(await dispatcher.runOnce(), { delivered: 4, failed: 0, dropped: 0 });
  assertEquals(sent, seen);
  await dispatcher.stop();
});

Deno.test("WebhookDispatcher gives up on a silent receiver", async () => {
  const rx = startReceiver(hang);
  try {
    const { bus, dispatcher, log } = setup([{ url: `${rx.url}/SECRETKEY`, kind: "json" }], {
      timeoutMs: 50,
      retries: 2,
      backoffMs: [10],
    });
    const t0 = performance.now();
    bus.publish(topics.events, event());
    assertEquals(await dispatcher.runOnce(), { delivered: 0, failed: 1, dropped: 0 });
    const elapsed = performance.now() - t0;
    // Three attempts of 50 ms with two waits of 10 ms between them: a floor, which a busy
    // machine only raises.
    assert(elapsed >= 160, `gave up after ${elapsed.toFixed(0)} ms`);
    assertEquals(rx.requests.length, 3);
    assertEquals(log.lines.length, 1);
    assertStringIncludes(log.lines[0], "reason=no answer within 50 ms");
    assertStringIncludes(log.lines[0], "attempts=3");
    assert(!log.lines[0].includes("SECRETKEY"), log.lines[0]);
    await dispatcher.stop();
  } finally {
    await rx.close();
  }
});

Deno.test("WebhookDispatcher retries network errors and logs only the host", async () => {
  // A port that was just free: nothing listens there any more.
  const closed = startReceiver();
  const deadUrl = `${closed.url}/DEVICEKEY`;
  await closed.close();
  const { bus, dispatcher, log } = setup([{ url: deadUrl, kind: "bark" }], { retries: 1 });
  bus.publish(topics.events, event());
  assertEquals(await dispatcher.runOnce(), { delivered: 0, failed: 1, dropped: 0 });
  assertEquals(log.lines.length, 1);
  assertStringIncludes(log.lines[0], "attempts=2");
  assertStringIncludes(log.lines[0], "reason=TypeError");
  assertStringIncludes(log.lines[0], `host=${new URL(deadUrl).host}`);
  assert(!log.lines[0].includes("DEVICEKEY"), log.lines[0]);
  await dispatcher.stop();
});

Deno.test("WebhookDispatcher drops the oldest events when a hook's queue is full", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const rx = startReceiver(async (_req, n) => {
    if (n === 0) await gate;
    return new Response("ok");
  });
  try {
    const { bus, dispatcher, log } = setup([{ url: `${rx.url}/h`, kind: "json" }], {
      maxQueue: 2,
    });
    const events = [1, 2, 3, 4, 5].map(() => event());
    bus.publish(topics.events, events[0]);
    await rx.waitFor(1); // the first is in flight, held by the receiver
    for (const e of events.slice(1)) bus.publish(topics.events, e);
    release();
    assertEquals(await dispatcher.runOnce(), { delivered: 3, failed: 0, dropped: 2 });
    assertEquals(ids(rx.requests), [events[0].id, events[3].id, events[4].id]);
    const full = log.lines.filter((l) => l.includes("Webhook queue full"));
    assertEquals(full.length, 1, "one warning per burst, not one per dropped event");
    assert(log.lines.some((l) => l.includes("Webhook queue drained") && l.includes("dropped=2")));
    await dispatcher.stop();
  } finally {
    await rx.close();
  }
});

Deno.test("WebhookDispatcher keeps one hook's order while another hook hangs", async () => {
  const slow = startReceiver(hang);
  const fast = startReceiver();
  try {
    const { bus, dispatcher } = setup([
      { url: `${slow.url}/slow`, kind: "json" },
      { url: `${fast.url}/fast`, kind: "json" },
    ], { timeoutMs: 5000 });
    const events = [1, 2, 3].map(() => event());
    for (const e of events) bus.publish(topics.events, e);
    await fast.waitFor(3, 2000);
    assertEquals(ids(fast.requests), events.map((e) => e.id));
    assertEquals(slow.requests.length, 1);
    await dispatcher.stop();
    // The slow hook's request in flight and its two queued events were dropped (and the fast
    // hook's last one too, when its answer had not been read yet).
    const counts = await dispatcher.runOnce();
    assertEquals(counts.delivered + counts.dropped, 6);
    assert(counts.dropped >= 3 && counts.failed === 0, JSON.stringify(counts));
  } finally {
    await Promise.all([slow.close(), fast.close()]);
  }
});

Deno.test("WebhookDispatcher.stop() aborts what is in flight and unsubscribes", async () => {
  // The receiver answers only when it closes, and no request times out first.
  let answered = false;
  const rx = startReceiver(async (req, n, closing) => {
    const response = await hang(req, n, closing);
    answered = true;
    return response;
  }, { lifetimeMs: 60_000 });
  try {
    const { bus, dispatcher, log } = setup([{ url: `${rx.url}/h`, kind: "json" }], {
      timeoutMs: 3_600_000,
    });
    assertEquals(bus.listenerCount(topics.events), 1);
    bus.publish(topics.events, event());
    bus.publish(topics.events, event());
    await rx.waitFor(1);
    await dispatcher.stop();
    assert(!answered, "stop() waited for the receiver's answer");
    await dispatcher.stop();
    assertEquals(bus.listenerCount(topics.events), 0);
    bus.publish(topics.events, event());
    assertEquals(await dispatcher.runOnce(), { delivered: 0, failed: 0, dropped: 2 });
    assertEquals(rx.requests.length, 1);
    assertEquals(log.lines, []);
    assertThrows(() => dispatcher.start(), "it was stopped");
  } finally {
    await rx.close();
  }
});

Deno.test("WebhookDispatcher rejects bad options with an error naming the option", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ timeoutMs: 0 }, '"timeoutMs"'],
    [{ retries: -1 }, '"retries"'],
    [{ maxQueue: 0 }, '"maxQueue"'],
    [{ backoffMs: [10, -1] }, '"backoffMs[1]"'],
  ];
  for (const [opts, part] of cases) assertThrows(() => setup([], opts), part);
});

Deno.test("redactUrls() keeps only the origin of every URL in an error message", () => {
  assertEquals(
    redactUrls(
      "error sending request for url (https://api.day.app/DEVICEKEY/t/b?x=1): dns error",
    ),
    "error sending request for url (https://api.day.app/…): dns error",
  );
  assertEquals(redactUrls("no url here"), "no url here");
});
