/**
 * Walks every route the app registered and proves the scope rules hold for each:
 * deny by default, 401 without a token, 403 for a read token on anything that writes.
 */
import { assert, assertEquals } from "./assert.ts";
import { consoleSession as sessionOf, type Harness, withHarness } from "./_harness.ts";
import { createApp } from "../server/http/app.ts";
import type { RequestContext, RouteDef } from "../server/http/route.ts";

const concrete = (path: string) => path.replace(/\/:[a-z_]+/g, "/x-1");

/** Calls every write and admin route as a read caller; each must be refused. Returns how many. */
async function assertWritesRefused(
  h: Harness,
  as: { token: string | null; headers?: Record<string, string> },
): Promise<number> {
  let writes = 0;
  for (const r of h.app.routes) {
    if (r.scope !== "write" && r.scope !== "admin") continue;
    writes++;
    const res = await h.call(r.method, concrete(r.path), {
      ...as,
      body: { name: "x", command: ["true"], working_dir: "/", gpus: 0 },
    });
    assertEquals(res.status, 403, `${r.method} ${r.path}`);
    assertEquals(
      res.json.error.code,
      r.scope === "write" ? "WriteScopeError" : "ScopeError",
      `${r.method} ${r.path}`,
    );
  }
  return writes;
}

Deno.test("every registered route is declared in the API or page table with a scope", async () => {
  await withHarness((h) => {
    const declared = new Set(
      [...h.app.routes, ...h.app.pages].map((r) => `${r.method} ${r.path}`),
    );
    const registered = h.app.registered().filter((r) => r.method !== "ALL");
    assert(registered.length >= 30, `only ${registered.length} routes registered`);
    for (const r of registered) {
      assert(declared.has(`${r.method} ${r.path}`), `${r.method} ${r.path} has no declared scope`);
    }
    for (const r of h.app.routes) {
      assert(
        ["public", "read", "write", "admin", "agent"].includes(r.scope),
        `${r.path}: ${r.scope}`,
      );
    }
    for (const p of h.app.pages) {
      assert(["public", "read", "write"].includes(p.scope), p.path);
      // A page that changes state says so: only sign-in and sign-out post without write.
      if (p.method === "POST" && p.scope !== "write") {
        assert(p.scope === "public", `POST ${p.path} is declared ${p.scope}, not write`);
      }
    }
  });
});

Deno.test("every console page that needs a session redirects to /login without one", async () => {
  await withHarness(async (h) => {
    const pages = h.app.pages.filter((p) => p.scope !== "public");
    assert(pages.length >= 1);
    for (const p of pages) {
      const res = await h.app.fetch(
        new Request(`http://gpuctl.test${concrete(p.path)}`, {
          method: p.method,
          headers: { "sec-fetch-site": "same-origin" },
        }),
      );
      assertEquals(res.status, 303, `${p.method} ${p.path}`);
      assert(res.headers.get("location")!.startsWith("/login"), `${p.method} ${p.path}`);
    }
  });
});

Deno.test("every write page refuses a read session with the refusal page and changes nothing; a write session passes the check", async () => {
  await withHarness(async (h) => {
    const tables = [
      "jobs",
      "projects",
      "experiments",
      "notes",
      "metric_definitions",
      "evaluations",
      "events",
    ];
    const count = () =>
      tables.map((t) => h.ctx.db.sqlite.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get()!.n);
    const before = count();
    const read = await sessionOf(h, "read");
    const admin = await sessionOf(h, "admin");
    const writes = h.app.pages.filter((p) => p.scope === "write");
    assert(writes.length >= 10, `only ${writes.length} write pages`);
    const post = (path: string, cookie: string) =>
      h.app.fetch(
        new Request(`http://gpuctl.test${concrete(path)}`, {
          method: "POST",
          headers: { cookie, origin: "http://gpuctl.test" },
          body: new URLSearchParams({
            name: "x",
            project: "x",
            command: "true",
            confirmed: "1",
            mark: "kept",
            reason: "x",
            text: "x",
            key: "loss",
          }),
        }),
      );
    for (const p of writes) {
      const res = await post(p.path, read);
      const html = await res.text();
      assertEquals(res.status, 403, `POST ${p.path} as a read session`);
      assert(html.includes("WriteScopeError") || html.includes("needs a token of scope"), p.path);
    }
    assertEquals(count(), before, "a refused page changed something");
    for (const p of writes) {
      const res = await post(p.path, admin);
      await res.body?.cancel();
      assert(res.status !== 403, `POST ${p.path} refused an admin session (${res.status})`);
    }
  });
});

Deno.test("a read session gets 403 WriteScopeError on every write route, like a read token", async () => {
  await withHarness(async (h) => {
    const cookie = await sessionOf(h, "read");
    await assertWritesRefused(h, {
      token: null,
      headers: { cookie, "sec-fetch-site": "same-origin" },
    });
  });
});

Deno.test("an admin session's state changes from another origin are refused on every route", async () => {
  await withHarness(async (h) => {
    const cookie = await sessionOf(h, "admin");
    const count = () =>
      h.ctx.db.sqlite.prepare(
        "SELECT (SELECT COUNT(*) FROM jobs) + (SELECT COUNT(*) FROM tokens) AS n",
      ).get()!.n;
    const before = count();
    const crossSite: Record<string, string>[] = [
      { origin: "http://evil.test" },
      { "sec-fetch-site": "cross-site" },
      { "sec-fetch-site": "same-site" },
      {},
    ];
    for (const r of h.app.routes) {
      if (r.method === "GET") continue;
      for (const headers of crossSite) {
        const res = await h.call(r.method, concrete(r.path), {
          token: null,
          headers: { cookie, ...headers },
          body: { name: "x", scope: "admin", command: ["true"], working_dir: "/", gpus: 0 },
        });
        assertEquals(res.status, 403, `${r.method} ${r.path} ${JSON.stringify(headers)}`);
        assertEquals(res.json.error.code, "CrossOriginRefused");
      }
    }
    // A WebSocket upgrade is a state change too, whatever its method.
    const ws = await h.call("GET", "/api/agent/ws", {
      token: null,
      headers: { cookie, origin: "http://evil.test", upgrade: "websocket" },
    });
    assertEquals(ws.status, 403);
    assertEquals(ws.json.error.code, "CrossOriginRefused");
    assertEquals(count(), before);
    // The same request from the console's own page goes through.
    const ok = await h.call("POST", "/api/tokens", {
      token: null,
      headers: { cookie, origin: "http://gpuctl.test" },
      body: { name: "x", scope: "read" },
    });
    assertEquals(ok.status, 201, ok.text);
  });
});

Deno.test("every non-public route answers 401 without a token and 403 for the wrong lane", async () => {
  await withHarness(async (h) => {
    for (const r of h.app.routes) {
      if (r.scope === "public") continue;
      const path = concrete(r.path);
      const none = await h.call(r.method, path, { token: null, body: {} });
      assertEquals(none.status, 401, `${r.method} ${r.path} without a token`);
      assertEquals(none.json.error.code, "Unauthorized");
      if (r.scope !== "agent") {
        const agent = await h.call(r.method, path, { token: h.tokens.agent, body: {} });
        assertEquals(agent.status, 403, `${r.method} ${r.path} with an agent token`);
      }
    }
  });
});

Deno.test("a read token gets 403 WriteScopeError on every write route and nothing changes", async () => {
  await withHarness(async (h) => {
    const before = h.ctx.db.sqlite.prepare(
      "SELECT (SELECT COUNT(*) FROM jobs) + (SELECT COUNT(*) FROM runs) + (SELECT COUNT(*) FROM projects) + (SELECT COUNT(*) FROM tokens) AS n",
    ).get()!.n;
    const writes = await assertWritesRefused(h, { token: h.tokens.read });
    assert(writes >= 12, `only ${writes} write routes`);
    const after = h.ctx.db.sqlite.prepare(
      "SELECT (SELECT COUNT(*) FROM jobs) + (SELECT COUNT(*) FROM runs) + (SELECT COUNT(*) FROM projects) + (SELECT COUNT(*) FROM tokens) AS n",
    ).get()!.n;
    assertEquals(after, before);
  });
});

Deno.test("a read token may call every read route", async () => {
  await withHarness(async (h) => {
    for (const r of h.app.routes) {
      if (r.scope !== "read" || r.path.endsWith("/stream")) continue;
      const res = await h.call(r.method, concrete(r.path), {
        token: h.tokens.read,
        body: { runs: ["x-1"], keys: ["loss"] },
      });
      assert(res.status !== 401 && res.status !== 403, `${r.method} ${r.path}: ${res.status}`);
    }
  });
});

Deno.test("a route that declares no scope is refused, even to an admin", async () => {
  await withHarness(async (h) => {
    let ran = false;
    const rogue = {
      method: "GET",
      path: "/api/rogue",
      handler: (c: RequestContext) => {
        ran = true;
        return c.json({});
      },
    } as unknown as RouteDef;
    const app = createApp(h.ctx, [rogue]);
    const res = await app.fetch(
      new Request("http://t/api/rogue", { headers: { authorization: `Bearer ${h.tokens.admin}` } }),
    );
    assertEquals(res.status, 403);
    assertEquals(ran, false);
  });
});
