/** Console sign-in: the session cookie, its flags and lifetime, and what it may and may not do. */
import { assert, assertEquals, assertFalse } from "./assert.ts";
import { type Harness, withHarness } from "./_harness.ts";
import { createApp } from "../server/http/app.ts";
import { createToken, deleteToken } from "../server/auth/service.ts";
import { randomSessionKey } from "../server/auth/session.ts";
import { safeNext } from "../routes/login.tsx";

const ORIGIN = "http://gpuctl.test";

type AppLike = { fetch: (req: Request) => Promise<Response> };

/** Posts the sign-in form like a browser on the console's own page does. */
async function signIn(
  app: AppLike,
  token: string,
  headers: Record<string, string> = { origin: ORIGIN },
  next?: string,
) {
  const body = new URLSearchParams({ token, ...(next ? { next } : {}) });
  const res = await app.fetch(
    new Request(`${ORIGIN}/login`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
      body,
    }),
  );
  const setCookie = res.headers.get("set-cookie");
  const cookie = setCookie ? setCookie.split(";")[0] : null;
  return { res, setCookie, cookie, text: await res.text() };
}

async function page(app: AppLike, path: string, cookie: string | null) {
  const res = await app.fetch(
    new Request(`${ORIGIN}${path}`, { headers: cookie ? { cookie } : {} }),
  );
  return { res, text: await res.text() };
}

async function signedIn(h: Harness, scope: "admin" | "read" = "admin") {
  const { cookie } = await signIn(h.app, h.tokens[scope]);
  assert(cookie, "no session cookie");
  return cookie;
}

Deno.test("pages redirect to /login without a session, and render with one", async () => {
  await withHarness(async (h) => {
    const anon = await page(h.app, "/", null);
    assertEquals(anon.res.status, 303);
    assertEquals(anon.res.headers.get("location"), "/login");
    const login = await page(h.app, "/login", null);
    assertEquals(login.res.status, 200);
    assert(login.text.includes('name="token"'));
    assertFalse(login.text.includes("<script"), "the sign-in page ships no script");

    const cookie = await signedIn(h);
    const home = await page(h.app, "/", cookie);
    assertEquals(home.res.status, 200);
    assert(home.text.includes("test-admin"), "the signed-in token's name is shown");
    assert(home.text.includes('action="/logout"'), "sign out is offered");
  });
});

Deno.test("sign-in sets an HttpOnly SameSite=Strict cookie; Secure only over TLS or a trusted proxy", async () => {
  await withHarness(async (h) => {
    const plain = await signIn(h.app, h.tokens.admin);
    assertEquals(plain.res.status, 303);
    assertEquals(plain.res.headers.get("location"), "/");
    const flags = plain.setCookie!.split("; ");
    for (const f of ["HttpOnly", "SameSite=Strict", "Path=/"]) assert(flags.includes(f), f);
    assertFalse(flags.includes("Secure"), "no Secure over plain HTTP");
    assertFalse(plain.setCookie!.includes(h.tokens.admin.split("_")[2]), "the secret stays out");

    const forwarded = { origin: "https://gpuctl.test", "x-forwarded-proto": "https" };
    const untrusted = await signIn(h.app, h.tokens.admin, forwarded);
    assertEquals(
      untrusted.res.status,
      403,
      "an https origin is not ours unless the proxy is trusted",
    );
    const trusting = createApp(h.ctx, [], { console: { trustForwardedProto: true } });
    const proxied = await signIn(trusting, h.tokens.admin, forwarded);
    assertEquals(proxied.res.status, 303);
    assert(proxied.setCookie!.split("; ").includes("Secure"), proxied.setCookie!);
  });
});

Deno.test("a wrong, agent or empty token gets the form back with the reason, and no cookie", async () => {
  await withHarness(async (h) => {
    const wrong = `${h.tokens.admin.slice(0, -4)}XXXX`;
    const bad = await signIn(h.app, wrong);
    assertEquals(bad.res.status, 401);
    assertEquals(bad.setCookie, null);
    assert(bad.text.includes("is not valid"), bad.text);
    assertFalse(bad.text.includes(wrong), "the token typed is not echoed back");
    const agent = await signIn(h.app, h.tokens.agent);
    assertEquals(agent.res.status, 403);
    assert(agent.text.includes("belongs to an agent"));
    const empty = await signIn(h.app, "  ");
    assertEquals(empty.res.status, 400);
    assert(empty.text.includes("is empty"));
    const huge = await signIn(h.app, "x".repeat(70_000));
    assertEquals(huge.res.status, 400);
    assert(huge.text.includes("larger than"), huge.text.slice(0, 2000));
  });
});

Deno.test("sign-in and sign-out forms from another site are refused", async () => {
  await withHarness(async (h) => {
    const attempts: Record<string, string>[] = [
      { origin: "http://evil.test" },
      { "sec-fetch-site": "cross-site" },
      {},
    ];
    for (const headers of attempts) {
      const r = await signIn(h.app, h.tokens.admin, headers);
      assertEquals(r.res.status, 403, JSON.stringify(headers));
      assertEquals(r.setCookie, null);
    }
    const cookie = await signedIn(h);
    const out = await h.app.fetch(
      new Request(`${ORIGIN}/logout`, {
        method: "POST",
        headers: { cookie, "sec-fetch-site": "cross-site" },
      }),
    );
    assertEquals(out.status, 403);
    assertEquals(out.headers.get("set-cookie"), null);
  });
});

Deno.test("sign-out clears the cookie", async () => {
  await withHarness(async (h) => {
    const cookie = await signedIn(h);
    const out = await h.app.fetch(
      new Request(`${ORIGIN}/logout`, {
        method: "POST",
        headers: { cookie, "sec-fetch-site": "same-origin" },
      }),
    );
    assertEquals(out.status, 303);
    assertEquals(out.headers.get("location"), "/login");
    assert(out.headers.get("set-cookie")!.startsWith("gpuctl_session=;"));
    assert(out.headers.get("set-cookie")!.includes("Max-Age=0"));
  });
});

Deno.test("a session survives a restart with the same key and ends with its token", async () => {
  await withHarness(async (h) => {
    const key = randomSessionKey();
    const first = createApp(h.ctx, [], { console: { sessionKey: key } });
    const t = createToken(h.ctx, { name: "laptop", scope: "read" });
    const { cookie } = await signIn(first, t.token);
    const again = createApp(h.ctx, [], { console: { sessionKey: key } });
    assertEquals((await page(again, "/", cookie)).res.status, 200, "same key: still signed in");
    const other = createApp(h.ctx, [], { console: { sessionKey: randomSessionKey() } });
    assertEquals((await page(other, "/", cookie)).res.status, 303, "another key: signed out");

    const [id, expires, sig] = cookie!.split("=")[1].split(".");
    const tampered = `gpuctl_session=${id}.${Number(expires) + 1000}.${sig}`;
    assertEquals((await page(again, "/", tampered)).res.status, 303, "a longer life is forged");

    deleteToken(h.ctx, t.id, {
      token_id: "someone-else",
      name: "admin",
      scope: "admin",
      node_id: null,
    });
    assertEquals((await page(again, "/", cookie)).res.status, 303, "the token is gone");
  });
});

Deno.test("a session ends when its time is up", async () => {
  let now = new Date("2026-01-01T00:00:00Z");
  await withHarness(async (h) => {
    const cookie = await signedIn(h);
    now = new Date("2026-01-07T23:00:00Z");
    assertEquals((await page(h.app, "/", cookie)).res.status, 200);
    now = new Date("2026-01-08T00:00:01Z");
    assertEquals((await page(h.app, "/", cookie)).res.status, 303);
  }, { now: () => now });
});

Deno.test("the API accepts the session cookie with its token's scope", async () => {
  await withHarness(async (h) => {
    const read = await signedIn(h, "read");
    const who = await h.call("GET", "/api/auth/whoami", { token: null, headers: { cookie: read } });
    assertEquals(who.status, 200);
    assertEquals([who.json.name, who.json.can_write], ["test-read", false]);
    const refused = await h.call("POST", "/api/jobs", {
      token: null,
      headers: { cookie: read, origin: ORIGIN },
      body: { name: "x", command: ["true"], working_dir: "/", gpus: 0 },
    });
    assertEquals(refused.status, 403);
    assertEquals(refused.json.error.code, "WriteScopeError");

    const admin = await signedIn(h);
    const made = await h.call("POST", "/api/tokens", {
      token: null,
      headers: { cookie: admin, "sec-fetch-site": "same-origin" },
      body: { name: "from-console", scope: "read" },
    });
    assertEquals(made.status, 201, made.text);
  });
});

Deno.test("a read session's page shows it changes nothing", async () => {
  await withHarness(async (h) => {
    const read = await page(h.app, "/", await signedIn(h, "read"));
    assert(read.text.includes("read-only"), "read sessions are marked");
    const admin = await page(h.app, "/", await signedIn(h));
    assertFalse(admin.text.includes("read-only"));
  });
});

Deno.test("user-controlled names render as text, and every page carries the CSP", async () => {
  await withHarness(async (h) => {
    const evil = "<img src=x onerror=alert(1)>";
    const t = createToken(h.ctx, { name: evil, scope: "read" });
    const { cookie } = await signIn(h.app, t.token);
    const home = await page(h.app, "/", cookie);
    assertFalse(home.text.includes(evil), "the name is not markup");
    assert(home.text.includes("&lt;img src=x onerror=alert(1)>"), "the name is shown as text");
    const csp = home.res.headers.get("content-security-policy")!;
    assert(csp.includes("script-src 'self'") && !csp.includes("unsafe-inline"), csp);
    for (const path of ["/login"]) {
      const r = await page(h.app, path, null);
      assertEquals(r.res.headers.get("content-security-policy"), csp, path);
    }
  });
});

Deno.test("after sign-in the browser goes back where it was, never to another site", async () => {
  await withHarness(async (h) => {
    const r = await signIn(h.app, h.tokens.admin, { origin: ORIGIN }, "/?tab=x");
    assertEquals(r.res.headers.get("location"), "/?tab=x");
    for (const bad of ["//evil.test/", "/\\evil.test", "https://evil.test/", "evil", ""]) {
      assertEquals(safeNext(bad), "/", bad);
    }
    const anon = await page(h.app, "/?tab=x", null);
    assertEquals(anon.res.headers.get("location"), "/login?next=%2F%3Ftab%3Dx");
  });
});
