/** MCP clients for tests: over streamable HTTP (to a URL, or to an in-process app). */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

/** A connected client of `<base>/mcp` with a bearer token; `fetch` may be an app's handler. */
export async function httpClient(
  base: string,
  token: string,
  fetchFn?: (req: Request) => Promise<Response>,
): Promise<Client & { [Symbol.asyncDispose](): Promise<void> }> {
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", base), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    fetch: fetchFn
      ? (url: string | URL, init?: RequestInit) => fetchFn(new Request(url, init))
      : undefined,
  });
  const client = new Client({ name: "gpuctl-test", version: "0" });
  await client.connect(transport);
  return Object.assign(client, { [Symbol.asyncDispose]: () => client.close() });
}

/** A tool call's structured answer; throws with the text when the tool answered an error. */
export async function call(
  client: Client,
  name: string,
  args: Record<string, unknown> = {},
  timeoutMs = 60_000,
  // deno-lint-ignore no-explicit-any -- tests read arbitrary structured answers
): Promise<any> {
  const res = await client.callTool({ name, arguments: args }, undefined, {
    timeout: timeoutMs,
  });
  if (res.isError) {
    throw new Error(`${name}: ${(res.content as { text: string }[])[0]?.text}`);
  }
  return res.structuredContent;
}
