// `gpuctl token create (--agent --node ID | --scope SCOPE) [--name NAME] [--json]`

import { z } from "zod";
import type { TokenInfo } from "../../protocol/objects.ts";
import { GpuctlClient } from "../client.ts";
import { type Command, type CommandContext, EXIT_OK, UsageError } from "../command.ts";
import { resolveConnection } from "../config.ts";
import { CONNECTION_OPTIONS, connectionFlags, optionalText, parseFlags } from "../flags.ts";

const HELP = `usage: gpuctl token create --agent --node ID [--name NAME] [--json]
       gpuctl token create --scope read|write|admin [--name NAME] [--json]

Creates a token and prints it (the only time it is shown). An agent token made with
--agent --node ID is that node's own: it can speak only for node ID, and from then on the
shared agent_token of server.yaml can no longer speak for that node. Put it in the node's
agent.yaml (token:) or pass it with --token-file.

options:
  --agent          an agent token (needs --node)
  --node ID        the node id the agent token is bound to
  --scope SCOPE    read, write or admin (a person's token)
  --name NAME      the token's name (default: "<node> agent", or the scope)
  --json           print the created token as JSON
  --server URL     the gpuctl server (else GPUCTL_SERVER_URL, cli.yaml, server.yaml)
  --token TOKEN    an admin token (else GPUCTL_TOKEN, cli.yaml, server.yaml)
  -h, --help       this help`;

const OPTIONS = {
  ...CONNECTION_OPTIONS,
  agent: { type: "boolean" },
  node: { type: "string" },
  scope: { type: "string" },
  name: { type: "string" },
  json: { type: "boolean" },
} as const;

const flagsSchema = z.object({
  ...connectionFlags,
  agent: z.boolean().optional(),
  node: optionalText(),
  scope: z.enum(["read", "write", "admin"]).optional(),
  name: optionalText(),
  json: z.boolean().optional(),
});

/** The token body the flags ask for; a UsageError names what does not fit. */
function tokenRequest(
  flags: z.infer<typeof flagsSchema>,
): { name: string; scope: string; node_id?: string } {
  if (flags.agent) {
    if (flags.scope) throw new UsageError("--agent and --scope exclude each other");
    if (!flags.node) {
      throw new UsageError("--agent needs --node ID: an agent token is bound to one node");
    }
    return { name: flags.name ?? `${flags.node} agent`, scope: "agent", node_id: flags.node };
  }
  if (flags.node) throw new UsageError("--node is for agent tokens: add --agent");
  if (!flags.scope) throw new UsageError("say which token: --agent --node ID, or --scope SCOPE");
  return { name: flags.name ?? flags.scope, scope: flags.scope };
}

/** `gpuctl token`. */
export const tokenCommand: Command = {
  name: "token",
  summary: "create a token (an agent token bound to one node, or a person's)",
  help: HELP,
  async run(args: string[], ctx: CommandContext): Promise<number> {
    const { flags, positionals } = parseFlags(args, OPTIONS, flagsSchema);
    if (positionals.length !== 1 || positionals[0] !== "create") {
      throw new UsageError(
        `token takes one action, create; got: ${positionals.join(" ") || "none"}`,
      );
    }
    const body = tokenRequest(flags);
    const connection = await resolveConnection(flags, ctx.env);
    const client = new GpuctlClient({ ...connection, fetch: ctx.fetch });
    const created =
      (await client.request<TokenInfo & { token: string }>("POST", "/api/tokens", body)).body;
    if (flags.json) {
      ctx.io.out(JSON.stringify(created));
    } else {
      const bound = created.node_id ? ` for node ${created.node_id}` : "";
      ctx.io.out(`Created ${created.scope} token "${created.name}" (${created.id})${bound}:`);
      ctx.io.out(created.token);
    }
    return EXIT_OK;
  },
};
