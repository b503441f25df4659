/** An MCP client connected in memory to `createMcpServer` for one of a harness's tokens. */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { authenticate } from "../server/auth/service.ts";
import type { Context } from "../server/context.ts";
import { createMcpServer, type McpOptions } from "./mod.ts";

export async function memoryClient(
  ctx: Context,
  token: string,
  options: McpOptions = {},
): Promise<Client & { [Symbol.asyncDispose](): Promise<void> }> {
  const principal = authenticate(ctx, token);
  if (!principal) throw new Error("unknown token");
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createMcpServer(ctx, principal, options);
  await server.connect(serverSide);
  const client = new Client({ name: "gpuctl-test", version: "0" });
  await client.connect(clientSide);
  return Object.assign(client, {
    async [Symbol.asyncDispose]() {
      await client.close();
      await server.close();
    },
  });
}
