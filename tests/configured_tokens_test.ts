/**
 * server.yaml's tokens across restarts: installed on the first start, and never brought back
 * by a restart once deleted through the API. Each "start" is what `serve()` in main.ts does:
 * load the config, open the database, install the configured tokens.
 */
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { installTokens } from "../server/main.ts";
import { loadServerConfig } from "../server/config.ts";
import { openDatabase } from "../server/db/mod.ts";
import { createApp } from "../server/http/app.ts";
import { type Context, randomId } from "../server/context.ts";
import { Bus } from "../server/bus/bus.ts";
import { memoryLogger } from "../server/log.ts";

/** One server start over `home`: its context, a caller, and its log lines. */
async function start(home: string) {
  const config = await loadServerConfig(home);
  const log = memoryLogger();
  const ctx: Context = {
    db: openDatabase(config.dbPath),
    bus: new Bus(),
    log,
    now: () => new Date(),
    newId: randomId,
    backupDir: config.backupDir,
  };
  installTokens(ctx, config);
  const app = createApp(ctx);
  const call = async (method: string, path: string, token: string) =>
    (await app.fetch(
      new Request(`http://gpuctl.test${path}`, {
        method,
        headers: { authorization: `Bearer ${token}` },
      }),
    )).status;
  return { config, ctx, call, lines: log.lines, stop: () => ctx.db.close() };
}

Deno.test("a configured token deleted through the API stays deleted across restarts", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-home-" });
  try {
    const first = await start(home);
    const { adminToken, agentToken } = first.config;
    assertEquals(await first.call("GET", "/api/auth/whoami", adminToken), 200);
    assertEquals(first.lines, [], "a first start installs both tokens quietly");
    const agentId = agentToken.split("_")[1];
    assertEquals(await first.call("DELETE", `/api/tokens/${agentId}`, adminToken), 200);
    first.stop();

    const second = await start(home);
    try {
      assertEquals(second.config.agentToken, agentToken, "server.yaml still holds it");
      assertEquals(await second.call("GET", "/api/agent/ws", agentToken), 401);
      assertEquals(await second.call("GET", "/api/auth/whoami", adminToken), 200);
      assertEquals(second.lines.length, 1, second.lines.join("\n"));
      assertStringIncludes(second.lines[0], "the agent_token in");
      assertStringIncludes(second.lines[0], "was deleted through the API");
    } finally {
      second.stop();
    }
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
