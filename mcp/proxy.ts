/**
 * An MCP server that forwards to a gpuctl server's `/mcp`: what `gpuctl mcp stdio` and
 * `gpuctl mcp serve` run, in a process of their own, so nothing they do can touch the server
 * (which alone owns the database). tools/list and tools/call pass through unchanged; a server
 * that cannot be reached becomes a tool error that says so, and the next call tries again.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResult,
  CallToolResultSchema,
  type ListToolsRequest,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  type Progress,
  type ServerNotification,
} from "@modelcontextprotocol/sdk/types.js";
import { MCP_INSTRUCTIONS, MCP_SERVER_INFO } from "./mod.ts";
import { toolError } from "./_tool.ts";
import { MAX_WAIT_S } from "../server/runs/wait.ts";

/** Where the tools really run: a gpuctl server and the token to call it with. */
export interface Upstream {
  /** The gpuctl server's base URL, e.g. `http://127.0.0.1:8600`. */
  serverUrl: string;
  token: string;
  /** Where the token came from, for messages (`GPUCTL_TOKEN`, a file's path). */
  tokenFrom?: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
}

// Longer than the longest wait_for_run, so the server's own timeout answers first.
const CALL_TIMEOUT_MS = (MAX_WAIT_S + 30) * 1000;

/** One connection to the upstream `/mcp`, made on first use and again after a failure. */
export class UpstreamClient {
  #upstream: Upstream;
  #client: Promise<Client> | null = null;

  constructor(upstream: Upstream) {
    this.#upstream = upstream;
  }

  /** The `/mcp` URL forwarded to. */
  get url(): URL {
    return new URL("/mcp", this.#upstream.serverUrl);
  }

  #connect(): Promise<Client> {
    this.#client ??= (async () => {
      const up = this.#upstream;
      const transport = new StreamableHTTPClientTransport(this.url, {
        requestInit: { headers: { authorization: `Bearer ${up.token}` } },
        fetch: up.fetch,
      });
      const client = new Client({ name: "gpuctl-mcp-proxy", version: MCP_SERVER_INFO.version });
      await client.connect(transport);
      return client;
    })();
    return this.#client;
  }

  /** The error in words, and the connection dropped so the next call connects again. */
  #failed(err: unknown): string {
    const old = this.#client;
    this.#client = null;
    old?.then((c) => c.close()).catch(() => {});
    const message = err instanceof Error ? err.message : String(err);
    const from = this.#upstream.tokenFrom ? ` (token from ${this.#upstream.tokenFrom})` : "";
    if (/\b401\b|Unauthorized/.test(message)) {
      return `Unauthorized: the gpuctl server at ${this.url} refused the token${from}: ${message}`;
    }
    return `Unreachable: cannot reach the gpuctl server at ${this.url}: ${message}`;
  }

  async listTools(params: ListToolsRequest["params"]) {
    try {
      const client = await this.#connect();
      return await client.request({ method: "tools/list", params }, ListToolsResultSchema);
    } catch (err) {
      throw new Error(this.#failed(err), { cause: err });
    }
  }

  /** Calls a tool upstream; its progress notifications go to `onprogress`. */
  async callTool(
    params: CallToolRequest["params"],
    signal?: AbortSignal,
    onprogress?: (p: Progress) => void,
  ): Promise<CallToolResult> {
    let client: Client;
    try {
      client = await this.#connect();
    } catch (err) {
      const [code, ...rest] = this.#failed(err).split(": ");
      return toolError(code, rest.join(": "));
    }
    try {
      // A plain request: the answer passes through as the server gave it.
      return await client.request({ method: "tools/call", params }, CallToolResultSchema, {
        timeout: CALL_TIMEOUT_MS,
        signal,
        onprogress,
        resetTimeoutOnProgress: onprogress !== undefined,
      }) as CallToolResult;
    } catch (err) {
      if (signal?.aborted) throw err;
      const [code, ...rest] = this.#failed(err).split(": ");
      return toolError(code, rest.join(": "));
    }
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = null;
    await (await client?.catch(() => null))?.close();
  }
}

interface ProxyExtra {
  signal: AbortSignal;
  sendNotification: (n: ServerNotification) => Promise<void>;
}

/** A local MCP server whose tools are the upstream server's. */
export function createProxyServer(upstream: UpstreamClient): Server {
  const server = new Server(MCP_SERVER_INFO, {
    capabilities: { tools: {} },
    instructions: MCP_INSTRUCTIONS,
  });
  server.setRequestHandler(
    ListToolsRequestSchema,
    (req: ListToolsRequest) => upstream.listTools(req.params),
  );
  server.setRequestHandler(
    CallToolRequestSchema,
    (req: CallToolRequest, extra: ProxyExtra) => {
      // The caller's progress token stays here: upstream, the proxy's client uses its own.
      const token = req.params._meta?.progressToken;
      const onprogress = token === undefined
        ? undefined
        : (p: Progress) =>
          void extra.sendNotification({
            method: "notifications/progress",
            params: { ...p, progressToken: token },
          }).catch(() => {});
      return upstream.callTool(req.params, extra.signal, onprogress);
    },
  );
  return server;
}
