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

/** A bare `tools/call` POST to an MCP endpoint, as a client without the SDK would send it. */
export function postToolCall(
  url: string,
  name: string,
  args: Record<string, unknown>,
  opts: { token?: string; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(url, {
    method: "POST",
    signal: opts.signal,
    headers: {
      ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}),
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "tools/call",
      params: { name, arguments: args },
    }),
  });
}

/** The JSON-RPC message of a one-message SSE answer. */
export async function sseMessage(res: Response) {
  return JSON.parse(/^data: (.*)$/m.exec(await res.text())![1]);
}
