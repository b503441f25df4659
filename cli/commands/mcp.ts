// `gpuctl mcp stdio` and `gpuctl mcp serve --port N`: the MCP server outside the gpuctl server,
// forwarding to its /mcp with the server URL and token resolved the usual way.

import { z } from "zod";
import { type CommandContext, EXIT_OK } from "../command.ts";
import { resolveConnection } from "../config.ts";
import { defineCommand, defineGroup } from "../define_command.ts";
import { CONNECTION_FLAGS, optionalText } from "../flags.ts";
import { serveStdio } from "../../mcp/stdio.ts";
import { serveHttp } from "../../mcp/serve.ts";

/** The port `gpuctl mcp serve` listens on unless told. */
export const DEFAULT_MCP_PORT = 8700;

const TOKEN_NOTE = `A read token may observe; a write token may also submit, cancel, retry,
evaluate and start sweeps.`;

async function upstream(flags: { server?: string; token?: string }, ctx: CommandContext) {
  const c = await resolveConnection(flags, ctx.env);
  return {
    connection: c,
    upstream: { serverUrl: c.serverUrl, token: c.token, tokenFrom: c.tokenFrom, fetch: ctx.fetch },
  };
}

const stdio = defineCommand({
  name: "mcp stdio",
  summary: "speak MCP on stdin/stdout, for clients that launch their servers",
  description: `Every call is forwarded to the gpuctl server's /mcp. stdout carries only MCP
messages; what gpuctl says goes to stderr. ${TOKEN_NOTE}`,
  examples: [
    "claude mcp add gpuctl -- gpuctl mcp stdio",
    "gpuctl mcp stdio --server http://gpu-1:8600",
  ],
  flags: CONNECTION_FLAGS,
  async run({ flags }, ctx) {
    const { connection: c, upstream: up } = await upstream(flags, ctx);
    ctx.io.err(`gpuctl mcp: forwarding stdio to ${c.serverUrl}/mcp (token from ${c.tokenFrom})`);
    await serveStdio(up);
    return EXIT_OK;
  },
});

const serve = defineCommand({
  name: "mcp serve",
  summary: "serve MCP over streamable HTTP on a port of its own",
  description: `Serves http://HOST:PORT/mcp and forwards each call to the gpuctl server's /mcp:
a request's own bearer token is passed on, one without uses the token resolved as usual.
${TOKEN_NOTE}`,
  examples: ["gpuctl mcp serve --port 8700", "gpuctl mcp serve --host 127.0.0.1 --port 0"],
  flags: {
    port: {
      arg: "N",
      schema: z.coerce.number().int().min(0).max(65535).optional(),
      help: `the port to listen on (default ${DEFAULT_MCP_PORT})`,
    },
    host: {
      arg: "HOST",
      schema: optionalText(),
      help: "the address to listen on (default 127.0.0.1)",
    },
    ...CONNECTION_FLAGS,
  },
  async run({ flags }, ctx) {
    const { connection: c, upstream: up } = await upstream(flags, ctx);
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    for (const s of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(s, onSignal);
    try {
      await serveHttp(up, {
        port: flags.port ?? DEFAULT_MCP_PORT,
        hostname: flags.host,
        signal: stop.signal,
        onListen: (url) =>
          ctx.io.out(
            `gpuctl MCP at ${url}, forwarding to ${c.serverUrl}/mcp (token from ${c.tokenFrom})`,
          ),
      });
    } finally {
      for (const s of ["SIGINT", "SIGTERM"] as const) Deno.removeSignalListener(s, onSignal);
    }
    return EXIT_OK;
  },
});

/** `gpuctl mcp`. */
export const mcpCommand = defineGroup(
  "mcp",
  "the MCP server for LLM agents (stdio, or HTTP on its own port)",
  [stdio, serve],
  "gpuctl mcp stdio --server http://127.0.0.1:8600",
);
