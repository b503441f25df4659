/**
 * `gpuctl mcp serve --port N`: the MCP endpoint in a process of its own (streamable HTTP,
 * stateless, on a loopback address by default), forwarding to a gpuctl server's `/mcp`. A
 * caller's bearer token is passed on; a call without one uses the token `gpuctl` resolved.
 */
import { originProblem, serveOnce } from "./http.ts";
import { createProxyServer, type Upstream, UpstreamClient } from "./proxy.ts";

export interface ServeOptions {
  /** @default 0 (a free port) */
  port?: number;
  /** @default "127.0.0.1" */
  hostname?: string;
  signal?: AbortSignal;
  onListen?: (url: string) => void;
}

const jsonError = (status: number, code: string, message: string) =>
  Response.json({ error: { code, message } }, { status });

/** Serves `/mcp` until `signal` aborts; resolves when the listener has closed. */
export async function serveHttp(upstream: Upstream, options: ServeOptions = {}): Promise<void> {
  const clients = new Map<string, UpstreamClient>();
  const clientFor = (token: string) => {
    let c = clients.get(token);
    if (!c) {
      c = new UpstreamClient(
        token === upstream.token ? upstream : { ...upstream, token, tokenFrom: "the request" },
      );
      clients.set(token, c);
    }
    return c;
  };
  const server = Deno.serve({
    hostname: options.hostname ?? "127.0.0.1",
    port: options.port ?? 0,
    signal: options.signal,
    onListen: ({ hostname, port }) => options.onListen?.(`http://${hostname}:${port}/mcp`),
  }, async (req) => {
    if (new URL(req.url).pathname !== "/mcp") {
      return jsonError(404, "NotFound", "This server answers MCP at /mcp only");
    }
    if (req.method !== "POST") {
      return new Response(null, { status: 405, headers: { allow: "POST" } });
    }
    const problem = originProblem(req);
    if (problem) return jsonError(403, "OriginRefused", `POST /mcp refused: ${problem}`);
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "")?.[1];
    return await serveOnce(createProxyServer(clientFor(bearer ?? upstream.token)), req);
  });
  await server.finished;
  for (const c of clients.values()) await c.close();
}
