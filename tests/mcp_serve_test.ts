/** `gpuctl mcp serve`'s HTTP proxy in front of a server's /mcp (here the app in process). */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { withHarness } from "./_harness.ts";
import { call, httpClient, postToolCall, sseMessage } from "./_mcp_client.ts";
import { serveHttp } from "../mcp/serve.ts";
import type { Upstream } from "../mcp/proxy.ts";

async function withProxy(upstream: Upstream, test: (url: string) => Promise<void>) {
  const stop = new AbortController();
  let listening!: (url: string) => void;
  const url = new Promise<string>((resolve) => (listening = resolve));
  const served = serveHttp(upstream, { port: 0, signal: stop.signal, onListen: listening });
  try {
    await test(new URL(await url).origin);
  } finally {
    stop.abort();
    await served;
  }
}

Deno.test("mcp serve forwards with its own token, or passes a caller's bearer token on", async () => {
  await withHarness(async (h) => {
    const upstream = {
      serverUrl: "http://gpuctl.test",
      token: h.tokens.write,
      fetch: (input: string | URL | Request, init?: RequestInit) =>
        h.app.fetch(new Request(input, init)),
    };
    await withProxy(upstream, async (base) => {
      // No token from the caller: the proxy's own (write) token.
      const transport = new StreamableHTTPClientTransport(new URL("/mcp", base));
      const own = new Client({ name: "t", version: "0" });
      await own.connect(transport);
      try {
        assertEquals((await own.listTools()).tools.length, 29);
        const job = await call(own, "submit_job", {
          name: "via-proxy",
          command: ["true"],
          working_dir: "/tmp",
          gpus: 0,
        });
        assertEquals((await call(own, "get_job", { job_id: job.id })).name, "via-proxy");
      } finally {
        await own.close();
      }
      // A read token of the caller's own is what the server sees.
      await using reader = await httpClient(base, h.tokens.read);
      const refused = await reader.callTool({
        name: "submit_job",
        arguments: { name: "x", command: ["true"], working_dir: "/tmp", gpus: 0 },
      });
      assertEquals(refused.isError, true);
      assertStringIncludes((refused.content as { text: string }[])[0].text, "WriteScopeError");
      const foreign = await fetch(`${base}/mcp`, {
        method: "POST",
        headers: { origin: "http://rebound.example", "content-type": "application/json" },
        body: "{}",
      });
      assertEquals([foreign.status, (await foreign.json()).error.code], [403, "OriginRefused"]);
    });
  });
});

Deno.test("mcp serve answers a tool error that names the server it cannot reach", async () => {
  const upstream = { serverUrl: "http://127.0.0.1:9", token: "t" };
  await withProxy(upstream, async (base) => {
    const res = await postToolCall(`${base}/mcp`, "get_status", {});
    const body = await sseMessage(res);
    assertEquals(body.result.isError, true);
    assertStringIncludes(
      body.result.content[0].text,
      "Unreachable: cannot reach the gpuctl server at http://127.0.0.1:9/mcp",
    );
  });
});
