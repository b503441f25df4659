/**
 * `/mcp` on the gpuctl server: the streamable HTTP transport, stateless (a fresh MCP server per
 * request, acting for the request's principal), answering on an SSE stream so a long
 * `wait_for_run` can send progress (and keep-alives) until its answer. Authentication and the scope of
 * the route are the REST API's (the app's guard and route table); a tool's own scope is checked
 * per call. Browsers are kept out: a request carrying an `Origin` that is not a loopback one is
 * refused, so a page whose name was rebound to this address (DNS rebinding) gets nothing.
 */
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { Principal } from "../server/auth/service.ts";
import type { Context } from "../server/context.ts";
import { HttpError } from "../server/http/errors.ts";
import { principalOf, type RouteDef } from "../server/http/route.ts";
import { createMcpServer } from "./mod.ts";

/** Hosts whose pages may call `/mcp` from a browser (a local MCP inspector). */
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** Null when the request may reach the MCP server, else why not (DNS rebinding guard). */
export function originProblem(req: Request): string | null {
  const origin = req.headers.get("origin");
  if (origin === null) return null;
  let host: string;
  try {
    host = new URL(origin).hostname;
  } catch {
    return `Origin ${JSON.stringify(origin.slice(0, 100))} is not a URL`;
  }
  if (LOOPBACK_HOSTS.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host)) return null;
  return `Origin ${JSON.stringify(origin.slice(0, 100))} is not a loopback origin; MCP clients ` +
    "send no Origin, and browser pages of other origins may not call /mcp";
}

/** Answers one MCP request (a JSON-RPC message or batch) for a principal. */
export async function handleMcpRequest(
  ctx: Context,
  principal: Principal,
  req: Request,
): Promise<Response> {
  const problem = originProblem(req);
  if (problem) throw new HttpError(403, "OriginRefused", `POST /mcp refused: ${problem}`);
  return await serveOnce(createMcpServer(ctx, principal), req);
}

/**
 * Answers one request with a fresh transport for `server`. The server is closed when the answer
 * has been read to its end, or as soon as the client stops reading it (it went away): closing
 * aborts its calls, so a wait_for_run stops waiting.
 */
export async function serveOnce(
  server: {
    connect(t: WebStandardStreamableHTTPServerTransport): Promise<void>;
    close(): Promise<void>;
  },
  req: Request,
): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await server.connect(transport);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    server.close().catch(() => {});
  };
  const res = await transport.handleRequest(req);
  if (!res.body) {
    close();
    return res;
  }
  // Watched through its body rather than req.signal, which also aborts after every answer.
  const reader = res.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) {
        controller.close();
        close();
      } else {
        controller.enqueue(value);
      }
    },
    cancel(reason) {
      close();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: res.status, headers: res.headers });
}

/** The `/mcp` route: any token that may read; control tools check for write themselves. */
export const mcpRoutes: RouteDef[] = [
  {
    method: "POST",
    path: "/mcp",
    scope: "read",
    handler: (c, ctx) => handleMcpRequest(ctx, principalOf(c), c.req.raw),
  },
];
