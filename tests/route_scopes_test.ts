/**
 * Walks every route the app registered and proves the scope rules hold for each:
 * deny by default, 401 without a token, 403 for a read token on anything that writes.
 */
import { assert, assertEquals } from "./assert.ts";
import { withHarness } from "./_harness.ts";
import { createApp } from "../server/http/app.ts";
import type { RequestContext, RouteDef } from "../server/http/route.ts";

const concrete = (path: string) => path.replace(/\/:[a-z_]+/g, "/x-1");

Deno.test("every registered API route is declared in the table with a scope", async () => {
  await withHarness((h) => {
    const declared = new Set(h.app.routes.map((r) => `${r.method} ${r.path}`));
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
    let writes = 0;
    for (const r of h.app.routes) {
      if (r.scope !== "write" && r.scope !== "admin") continue;
      writes++;
      const res = await h.call(r.method, concrete(r.path), {
        token: h.tokens.read,
        body: { name: "x", command: ["true"], working_dir: "/", gpus: 0 },
      });
      assertEquals(res.status, 403, `${r.method} ${r.path}`);
      assertEquals(
        res.json.error.code,
        r.scope === "write" ? "WriteScopeError" : "ScopeError",
        `${r.method} ${r.path}`,
      );
    }
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
