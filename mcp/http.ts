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
import { MAX_BODY_BYTES } from "../server/http/body.ts";
import { readCappedBytes } from "../server/read_body.ts";
import { createMcpServer } from "./mod.ts";
import { yieldWhenBusy } from "./_tool.ts";
import { reserveWaits } from "../server/runs/wait_slots.ts";

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

/**
 * Messages one JSON-RPC batch may hold. The MCP SDK takes a batch's messages all at once, so
 * this bounds what one request makes the server do before anything else gets a turn.
 */
export const MAX_MCP_BATCH = 32;

/**
 * The body of a POST: at most MAX_BODY_BYTES, and a batch of at most MAX_MCP_BATCH messages.
 * `json` is absent when the text is not JSON (the SDK answers that with its parse error).
 */
async function readMcpBody(req: Request): Promise<{ text: string; json?: unknown }> {
  const bytes = await readCappedBytes(req, MAX_BODY_BYTES);
  if (typeof bytes === "number") {
    throw new HttpError(
      413,
      "PayloadTooLarge",
      `POST /mcp refused: a body of more than ${MAX_BODY_BYTES} bytes`,
    );
  }
  const text = new TextDecoder().decode(bytes);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return { text };
  }
  if (Array.isArray(body) && body.length > MAX_MCP_BATCH) {
    throw new HttpError(
      413,
      "TooManyCalls",
      `POST /mcp refused: a batch of ${body.length} messages, at most ${MAX_MCP_BATCH}; ` +
        "send fewer at once",
    );
  }
  return { text, json: body };
}

/** How many `wait_for_run` calls a message or batch holds. */
function waitCalls(body: unknown): number {
  const messages = Array.isArray(body) ? body : [body];
  return messages.filter((m) =>
    (m as { method?: unknown } | null)?.method === "tools/call" &&
    (m as { params?: { name?: unknown } }).params?.name === "wait_for_run"
  ).length;
}

/** Answers one MCP request (a JSON-RPC message or batch) for a principal. */
export async function handleMcpRequest(
  ctx: Context,
  principal: Principal,
  req: Request,
): Promise<Response> {
  const problem = originProblem(req);
  if (problem) throw new HttpError(403, "OriginRefused", `POST /mcp refused: ${problem}`);
  if (req.method !== "POST") return await serveOnce(createMcpServer(ctx, principal), req);
  // Requests that arrive together are read in one turn of the loop: each takes its own.
  await yieldWhenBusy();
  const body = await readMcpBody(req);
  const waits = reserveWaits(ctx, principal.token_id, waitCalls(body.json));
  // Not JSON: the SDK reads the text again and answers with its parse error.
  const forSdk = "json" in body
    ? req
    : new Request(req.url, { method: "POST", headers: req.headers, body: body.text });
  try {
    await yieldWhenBusy();
    const server = createMcpServer(ctx, principal, { takeWaitSlot: waits.take });
    return await serveOnce(server, forSdk, body.json, waits.release);
  } catch (err) {
    waits.release();
    throw err;
  }
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
  parsedBody?: unknown,
  onClose?: () => void,
): Promise<Response> {
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  await server.connect(transport);
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    server.close().catch(() => {});
    onClose?.();
  };
  const res = await transport.handleRequest(req, parsedBody === undefined ? {} : { parsedBody });
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
