/**
 * Small trust boundaries: a sign-in `next` the Location header cannot hold, a notice put in a
 * link from another site, a webhook receiver that redirects, a relative working dir and
 * control characters in a job's name.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { consoleSession, createHarness } from "./_harness.ts";
import { startReceiver } from "../server/webhooks/_receiver.ts";
import { resolveWebhooks, WebhookDispatcher } from "../server/webhooks/mod.ts";
import { Bus, topics } from "../server/bus/bus.ts";
import { memoryLogger } from "../server/log.ts";
import { MAX_FAILED_SIGNINS_PER_MINUTE } from "../routes/login.tsx";

Deno.test("/login with a next the Location header cannot hold answers, and signs in to /", async () => {
  const h = await createHarness();
  try {
    const get = await h.app.fetch(new Request("http://gpuctl.test/login?next=/%C4%80"));
    assertEquals(get.status, 200);
    await get.body?.cancel();
    const post = await h.app.fetch(
      new Request("http://gpuctl.test/login", {
        method: "POST",
        headers: { origin: "http://gpuctl.test" },
        body: new URLSearchParams({ token: h.tokens.read, next: "/\u0100" }),
        redirect: "manual",
      }),
    );
    assertEquals(post.status, 303);
    assertEquals(post.headers.get("location"), "/");
  } finally {
    await h.close();
  }
});

Deno.test("a notice in a link from another site is not shown; one after the console's own redirect is", async () => {
  const h = await createHarness();
  try {
    const cookie = await consoleSession(h, "read");
    const words = "Your session expired: sign in at evil.example";
    const page = async (site: string | null) => {
      const headers: Record<string, string> = { cookie };
      if (site) headers["sec-fetch-site"] = site;
      const res = await h.app.fetch(
        new Request(`http://gpuctl.test/jobs?notice=${encodeURIComponent(words)}`, { headers }),
      );
      assertEquals(res.status, 200);
      return await res.text();
    };
    assert(!(await page("cross-site")).includes(words), "a cross-site link's notice shown");
    assert(!(await page("none")).includes(words), "a typed or pasted link's notice shown");
    assertStringIncludes(await page("same-origin"), words);
  } finally {
    await h.close();
  }
});

Deno.test("a webhook answered with a redirect is not followed: the body and signature stay put", async () => {
  const elsewhere = startReceiver();
  const rx = startReceiver((req) =>
    req.path === "/hook"
      ? new Response(null, { status: 307, headers: { location: `${elsewhere.url}/stolen` } })
      : new Response("ok")
  );
  const bus = new Bus();
  const log = memoryLogger();
  const hooks = new WebhookDispatcher({
    hooks: resolveWebhooks([{ url: `${rx.url}/hook`, kind: "json", secret: "s3cret-key" }]),
    bus,
    log,
    backoffMs: [5, 5, 5],
  });
  hooks.start();
  try {
    bus.publish(topics.events, {
      id: 1,
      ts: "2026-01-01T00:00:00Z",
      type: "LOSS_NAN",
      severity: "critical",
      run_id: "r-1",
      job_id: null,
      node_id: null,
      message: "NaN",
      data: {},
    });
    await rx.waitFor(1);
    for (let i = 0; i < 200 && !log.lines.some((l) => l.includes("not followed")); i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    await hooks.stop();
    assertEquals(elsewhere.requests.length, 0);
    assertEquals(rx.requests.length, 1, "a redirect is not retried either");
    assert(
      log.lines.some((l) => l.includes("redirect, not followed")),
      "the log says the redirect was not followed",
    );
  } finally {
    await rx.close();
    await elsewhere.close();
  }
});

Deno.test("a relative working dir and control characters in a job's name are refused, naming the field", async () => {
  const h = await createHarness();
  try {
    const submit = (over: Record<string, unknown>) =>
      h.call("POST", "/api/jobs", {
        body: { name: "j", command: ["true"], working_dir: "/w", gpus: 0, ...over },
      });
    const relative = await submit({ working_dir: "../../etc" });
    assertEquals(relative.status, 400);
    assertEquals(relative.json.error.details[0].field, "working_dir");
    const control = await submit({ name: "ok\x1b[2J\rfake" });
    assertEquals(control.status, 400);
    assertEquals(control.json.error.details[0].field, "name");
    assertEquals((await h.call("GET", "/api/jobs")).json.items, []);
    assertEquals((await submit({})).status, 201);
  } finally {
    await h.close();
  }
});

Deno.test("failed sign-ins are logged without the secret, and past the minute's budget every sign-in waits", async () => {
  let ms = Date.parse("2026-01-01T12:00:00Z");
  const h = await createHarness({ now: () => new Date(ms) });
  try {
    const signIn = (token: string) =>
      h.app.fetch(
        new Request("http://gpuctl.test/login", {
          method: "POST",
          headers: { origin: "http://gpuctl.test" },
          body: new URLSearchParams({ token }),
          redirect: "manual",
        }),
      );
    const guess = "gpc_abcdefgh_" + "s".repeat(40);
    for (let i = 0; i < MAX_FAILED_SIGNINS_PER_MINUTE; i++) {
      const res = await signIn(guess);
      assertEquals(res.status, 401);
      await res.body?.cancel();
    }
    const lines = (h.ctx.log as unknown as { lines: string[] }).lines
      .filter((l) => l.includes("console sign-in failed"));
    assertEquals(lines.length, MAX_FAILED_SIGNINS_PER_MINUTE);
    assert(!lines.some((l) => l.includes("s".repeat(40))), "a log line holds the secret");
    assertStringIncludes(lines[0], "abcdefgh");
    // Even the right token waits now.
    const refused = await signIn(h.tokens.read);
    assertEquals(refused.status, 429);
    assertStringIncludes(await refused.text(), "try again in 60 s");
    ms += 61_000;
    const ok = await signIn(h.tokens.read);
    assertEquals(ok.status, 303);
  } finally {
    await h.close();
  }
});
