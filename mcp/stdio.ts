/**
 * `gpuctl mcp stdio`: an MCP server on stdin/stdout for clients that launch their servers
 * (Claude Code, Cursor, …), forwarding every call to a gpuctl server's `/mcp`.
 */
import process from "node:process";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { createProxyServer, type Upstream, UpstreamClient } from "./proxy.ts";

/** Serves MCP on stdio until stdin ends; nothing but MCP messages goes to stdout. */
export async function serveStdio(upstream: Upstream): Promise<void> {
  const client = new UpstreamClient(upstream);
  const server = createProxyServer(client);
  const transport = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
  });
  // The transport does not notice the end of stdin by itself: the client is gone.
  process.stdin.once("end", () => void server.close());
  await server.connect(transport);
  await closed;
  await client.close();
}
