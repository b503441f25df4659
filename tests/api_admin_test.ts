import { assert, assertEquals, assertFalse, assertStringIncludes } from "./assert.ts";
import { createHarness, withHarness } from "./_harness.ts";
import { nodes } from "../server/db/mod.ts";

Deno.test("whoami names the token and whether it can write", async () => {
  await withHarness(async (h) => {
    const admin = await h.call("GET", "/api/auth/whoami");
    assertEquals([admin.json.name, admin.json.scope, admin.json.can_write], [
      "test-admin",
      "admin",
      true,
    ]);
    const read = await h.call("GET", "/api/auth/whoami", { token: h.tokens.read });
    assertEquals([read.json.scope, read.json.can_write], ["read", false]);
    assertEquals((await h.call("GET", "/api/auth/whoami", { token: null })).status, 401);
    const forged = h.tokens.admin.slice(0, -2) + "xx";
    assertEquals((await h.call("GET", "/api/auth/whoami", { token: forged })).status, 401);
  });
});

Deno.test("admins create, list and delete tokens; the secret is shown only once", async () => {
  await withHarness(async (h) => {
    const made = await h.call("POST", "/api/tokens", { body: { name: "ci", scope: "read" } });
    assertEquals(made.status, 201);
    assert(made.json.token.startsWith("gpc_"));
    const list = await h.call("GET", "/api/tokens");
    assertFalse(
      list.text.includes(made.json.token.split("_")[2]),
      "the secret never appears in lists",
    );
    assert(list.json.items.some((t: { id: string }) => t.id === made.json.id));
    const who = await h.call("GET", "/api/auth/whoami", { token: made.json.token });
    assertEquals(who.json.name, "ci");
    assertEquals((await h.call("DELETE", `/api/tokens/${made.json.id}`)).status, 200);
    assertEquals((await h.call("GET", "/api/auth/whoami", { token: made.json.token })).status, 401);
    assertEquals((await h.call("DELETE", `/api/tokens/${made.json.id}`)).status, 404);
    // Non-admins cannot manage tokens.
    assertEquals((await h.call("GET", "/api/tokens", { token: h.tokens.write })).status, 403);
  });
});

Deno.test("an expired token is refused", async () => {
  let now = new Date("2026-01-01T00:00:00Z");
  const h = await createHarness({ now: () => now });
  try {
    const made = await h.call("POST", "/api/tokens", {
      body: { name: "temp", scope: "read", expires_at: "2026-01-01T01:00:00Z" },
    });
    assertEquals((await h.call("GET", "/api/auth/whoami", { token: made.json.token })).status, 200);
    now = new Date("2026-01-01T01:00:01Z");
    assertEquals((await h.call("GET", "/api/auth/whoami", { token: made.json.token })).status, 401);
    const past = await h.call("POST", "/api/tokens", {
      body: { name: "old", scope: "read", expires_at: "2025-01-01T00:00:00Z" },
    });
    assertEquals(past.status, 400);
    assertStringIncludes(past.json.error.message, "expires_at");
  } finally {
    await h.close();
  }
});

Deno.test("an admin cannot delete the token it is using", async () => {
  await withHarness(async (h) => {
    const id = (await h.call("GET", "/api/auth/whoami")).json.token_id;
    assertEquals((await h.call("DELETE", `/api/tokens/${id}`)).status, 409);
  });
});

Deno.test("projects and experiments are created and updated idempotently", async () => {
  await withHarness(async (h) => {
    const p = await h.call("POST", "/api/projects", {
      body: { name: "vision", primary_metric: "eval/acc" },
    });
    assertEquals([p.status, p.json.primary_metric], [201, "eval/acc"]);
    const p2 = await h.call("POST", "/api/projects", {
      body: { name: "vision", description: "cnns" },
    });
    assertEquals([p2.status, p2.json.description, p2.json.primary_metric], [
      200,
      "cnns",
      "eval/acc",
    ]);
    const e = await h.call("POST", "/api/experiments", {
      body: { project: "vision", name: "aug" },
    });
    assertEquals(e.status, 201);
    const missing = await h.call("POST", "/api/experiments", {
      body: { project: "nope", name: "x" },
    });
    assertEquals(missing.status, 404);
  });
});

Deno.test("nodes recorded by the gateway are listed", async () => {
  await withHarness(async (h) => {
    nodes.upsertNode(h.ctx.db, {
      id: "gpu-1",
      hostname: "gpu-1.lan",
      status: "ONLINE",
      gpus: [{ index: 0, uuid: "GPU-x", name: "H100", memory_total_mb: 81920 }],
      cpu_count: 32,
      memory_mb: 256000,
      disk_free_mb: 100000,
      labels: { rack: "a" },
      agent_version: "0.1.0",
      cpu_slots: 2,
      avoid_foreign_gpus: false,
      fake_gpus: false,
      last_heartbeat_at: new Date().toISOString(),
    }, new Date().toISOString());
    const list = await h.call("GET", "/api/nodes", { token: h.tokens.read });
    assertEquals(
      list.json.items.map((n: { id: string; gpus: unknown[] }) => [n.id, n.gpus.length]),
      [["gpu-1", 1]],
    );
    assertEquals((await h.call("GET", "/api/nodes/gpu-1")).json.hostname, "gpu-1.lan");
    assertEquals((await h.call("GET", "/api/nodes/gpu-9")).status, 404);
  });
});

Deno.test("POST /api/admin/backup writes a checked copy under backups/", async () => {
  await withHarness(async (h) => {
    await h.call("POST", "/api/projects", { body: { name: "p" } });
    const res = await h.call("POST", "/api/admin/backup");
    assertEquals(res.status, 201);
    assert(/\/backups\/gpuctl-\d{8}-\d{6}\.db$/.test(res.json.path), res.json.path);
    assertEquals(res.json.integrity, "ok");
    assertEquals(
      (await h.call("POST", "/api/admin/backup", { token: h.tokens.write })).status,
      403,
    );
  });
});

Deno.test("access logs never carry tokens or query strings", async () => {
  await withHarness(async (h) => {
    await h.call("GET", "/api/runs?project=secret-project", { token: h.tokens.read });
    await h.call("POST", "/api/jobs", { token: h.tokens.read, body: {} });
    await h.call("GET", "/api/runs/nope?x=1");
    const logged = (h.ctx.log as unknown as { lines: string[] }).lines.join("\n");
    assert(logged.includes("/api/jobs"), "refused writes are logged");
    for (const t of Object.values(h.tokens)) assertFalse(logged.includes(t.split("_")[2]));
    assertFalse(logged.includes("secret-project"));
    assertFalse(logged.includes("?"));
  });
});
