// `gpuctl mcp stdio` and `gpuctl mcp serve --port N`: the MCP server outside the gpuctl server,
// forwarding to its /mcp with the server URL and token resolved the usual way.

import { z } from "zod";
import { type Command, type CommandContext, EXIT_OK, UsageError } from "../command.ts";
import { resolveConnection } from "../config.ts";
import { CONNECTION_OPTIONS, connectionFlags, optionalText, parseFlags } from "../flags.ts";
import { serveStdio } from "../../mcp/stdio.ts";
import { serveHttp } from "../../mcp/serve.ts";

const HELP = `usage: gpuctl mcp stdio [--server URL] [--token TOKEN]
       gpuctl mcp serve [--port N] [--host HOST] [--server URL] [--token TOKEN]

The gpuctl MCP tools (submit_job, wait_for_run, compare_runs, get_best_checkpoint, …) for
an MCP client, in a process of its own that forwards every call to the gpuctl server's
/mcp endpoint.

  stdio   speak MCP on stdin/stdout (for clients that launch their servers:
          claude mcp add gpuctl -- gpuctl mcp stdio)
  serve   serve MCP over streamable HTTP at http://HOST:N/mcp; a request's own bearer
          token is passed on, one without uses the token resolved below

options:
  --port N         the port of serve (default 8700)
  --host HOST      the address serve listens on (default 127.0.0.1)
  --server URL     the gpuctl server (else GPUCTL_SERVER_URL, cli.yaml, server.json, server.yaml)
  --token TOKEN    a token (else GPUCTL_TOKEN, cli.yaml, server.yaml); a read token may observe,
                   a write token may also submit, cancel, retry and evaluate
  -h, --help       this help`;

/** The port `gpuctl mcp serve` listens on unless told. */
export const DEFAULT_MCP_PORT = 8700;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  port: { type: "string" },
  host: { type: "string" },
} as const;

const flagsSchema = z.object({
  ...connectionFlags,
  port: z.coerce.number().int().min(0).max(65535).optional(),
  host: optionalText(),
});

/** `gpuctl mcp`. */
export const mcpCommand: Command = {
  name: "mcp",
  summary: "the MCP server for LLM agents (stdio, or HTTP on its own port)",
  help: HELP,
  async run(args: string[], ctx: CommandContext): Promise<number> {
    const { flags, positionals } = parseFlags(args, OPTIONS, flagsSchema);
    const action = positionals[0];
    if (positionals.length !== 1 || (action !== "stdio" && action !== "serve")) {
      throw new UsageError(`mcp takes stdio or serve; got: ${positionals.join(" ") || "none"}`);
    }
    if (action === "stdio" && (flags.port !== undefined || flags.host !== undefined)) {
      throw new UsageError("--port and --host are for serve");
    }
    const c = await resolveConnection(flags, ctx.env);
    const upstream = {
      serverUrl: c.serverUrl,
      token: c.token,
      tokenFrom: c.tokenFrom,
      fetch: ctx.fetch,
    };
    // stdout belongs to the MCP messages of stdio: everything else goes to stderr.
    if (action === "stdio") {
      ctx.io.err(`gpuctl mcp: forwarding stdio to ${c.serverUrl}/mcp (token from ${c.tokenFrom})`);
      await serveStdio(upstream);
      return EXIT_OK;
    }
    const stop = new AbortController();
    const onSignal = () => stop.abort();
    for (const s of ["SIGINT", "SIGTERM"] as const) Deno.addSignalListener(s, onSignal);
    try {
      await serveHttp(upstream, {
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
};
