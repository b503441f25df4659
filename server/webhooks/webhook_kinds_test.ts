/** Each kind's request as a real HTTP receiver sees it, sent through the bus. */
import { assertEquals } from "../../tests/assert.ts";
import { topics } from "../bus/bus.ts";
import { event, setup } from "./_fixtures.ts";
import { startReceiver } from "./_receiver.ts";
import { verifySignature } from "./signature.ts";

const CONSOLE = "https://gpu.example.com";
/** The dispatcher's clock, which dates the signatures. */
const NOW = new Date("2026-03-01T12:00:00.000Z");

Deno.test("every kind reaches its receiver in the shape that receiver expects", async () => {
  const rx = startReceiver();
  try {
    const { bus, dispatcher } = setup([
      { url: `${rx.url}/ntfy/gpu-alerts`, kind: "ntfy" },
      { url: `${rx.url}/bark/DEVICEKEY`, kind: "bark" },
      { url: `${rx.url}/slack/T1/B2/XYZ`, kind: "slack" },
      { url: `${rx.url}/discord/1/TOKEN`, kind: "discord" },
      { url: `${rx.url}/json`, kind: "json", secret: "s3cret" },
    ], { consoleUrl: CONSOLE, now: () => NOW });
    const e = event();
    bus.publish(topics.events, e);
    assertEquals(await dispatcher.runOnce(), { delivered: 5, failed: 0, dropped: 0 });
    await dispatcher.stop();

    const [ntfy] = rx.at("/ntfy/gpu-alerts");
    assertEquals(ntfy.method, "POST");
    assertEquals(ntfy.body, 'Loss "loss" is NaN at step 1200\nrun r-123');
    assertEquals(ntfy.headers.get("title"), "gpuctl: LOSS_NAN");
    assertEquals(ntfy.headers.get("priority"), "5");
    assertEquals(ntfy.headers.get("tags"), "rotating_light,loss_nan");
    assertEquals(ntfy.headers.get("click"), "https://gpu.example.com/runs/r-123");

    const bark = rx.requests.find((r) => r.path.startsWith("/bark/"))!;
    assertEquals(bark.method, "GET");
    assertEquals(
      bark.path,
      "/bark/DEVICEKEY/gpuctl%3A%20LOSS_NAN/" +
        "Loss%20%22loss%22%20is%20NaN%20at%20step%201200%0Arun%20r-123",
    );
    assertEquals(bark.query.get("group"), "gpuctl");
    assertEquals(bark.query.get("level"), "timeSensitive");

    const [slack] = rx.at("/slack/T1/B2/XYZ");
    assertEquals(slack.headers.get("content-type"), "application/json");
    assertEquals(
      JSON.parse(slack.body).text,
      '*LOSS_NAN* (critical) run r-123: Loss "loss" is NaN at step 1200',
    );

    const [discord] = rx.at("/discord/1/TOKEN");
    const d = JSON.parse(discord.body);
    assertEquals(d.content, '**LOSS_NAN** (critical) run r-123: Loss "loss" is NaN at step 1200');
    assertEquals(d.embeds[0].title, "gpuctl: LOSS_NAN");
    assertEquals(d.embeds[0].timestamp, e.ts);
    assertEquals(typeof d.embeds[0].color, "number");

    const [json] = rx.at("/json");
    assertEquals(JSON.parse(json.body), e);
    const ts = json.headers.get("x-gpuctl-timestamp")!;
    const sig = json.headers.get("x-gpuctl-signature")!;
    assertEquals(ts, String(NOW.getTime() / 1000));
    assertEquals(verifySignature("s3cret", ts, json.body, sig, { now: NOW }), true);
    assertEquals(verifySignature("other", ts, json.body, sig, { now: NOW }), false);
  } finally {
    await rx.close();
  }
});
