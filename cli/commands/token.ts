// `gpuctl token create|list|revoke`

import { z } from "zod";
import type { Page, TokenInfo } from "../../protocol/objects.ts";
import { EXIT_OK, UsageError } from "../command.ts";
import { connect } from "../config.ts";
import { defineCommand, defineGroup, type FlagValues } from "../define_command.ts";
import { CONNECTION_FLAGS, DATA_FLAGS, JSON_FLAG, optionalText } from "../flags.ts";
import { ago, clean, printPage } from "../output.ts";
import { BUDGET_FLAGS, budgetFromFlags, budgetText } from "../budget.ts";
import type { TokenBudget } from "../../protocol/budgets.ts";

const createFlags = {
  agent: { schema: z.boolean().optional(), help: "an agent token (needs --node)" },
  node: { arg: "ID", schema: optionalText(), help: "the node id the agent token is bound to" },
  scope: {
    arg: "SCOPE",
    schema: z.enum(["read", "write", "admin"]).optional(),
    help: "read, write or admin (a person's token)",
  },
  name: {
    arg: "NAME",
    schema: optionalText(),
    help: 'its name (default: "<node> agent", or the scope)',
  },
  ...BUDGET_FLAGS,
  ...JSON_FLAG,
  ...CONNECTION_FLAGS,
};

/** The token body the flags ask for; a UsageError names what does not fit. */
function tokenRequest(
  flags: FlagValues<typeof createFlags>,
): { name: string; scope: string; node_id?: string; budget?: TokenBudget } {
  const budget = budgetFromFlags(flags);
  const withBudget = Object.keys(budget).length ? { budget } : {};
  if (flags.agent) {
    if (flags.scope) throw new UsageError("--agent and --scope exclude each other");
    if (!flags.node) {
      throw new UsageError("--agent needs --node ID: an agent token is bound to one node");
    }
    return {
      name: flags.name ?? `${flags.node} agent`,
      scope: "agent",
      node_id: flags.node,
      ...withBudget,
    };
  }
  if (flags.node) throw new UsageError("--node is for agent tokens: add --agent");
  if (!flags.scope) throw new UsageError("say which token: --agent --node ID, or --scope SCOPE");
  return { name: flags.name ?? flags.scope, scope: flags.scope, ...withBudget };
}

const create = defineCommand({
  name: "token create",
  summary: "create a token (an agent token bound to one node, or a person's) and print it",
  description: `The token is shown this once. An agent token made with --agent --node ID is
that node's own: it can speak only for node ID, and from then on the shared agent_token of
server.yaml can no longer speak for that node. Put it in the node's agent.yaml (token:) or
pass it with --token-file. The --max-… flags set its budget: what the jobs and sweeps it
submits may use (change it later with gpuctl token budget). Needs an admin token.`,
  examples: [
    "gpuctl token create --scope read --name dashboard",
    "gpuctl token create --scope write --name agent --max-gpus 2 --max-gpu-hours 24 --max-wall-clock 7200",
    "gpuctl token create --agent --node gpu-2",
  ],
  flags: createFlags,
  async run({ flags }, ctx) {
    const body = tokenRequest(flags);
    const client = await connect(flags, ctx);
    const created = await client.post<TokenInfo & { token: string }>("/api/tokens", body);
    if (flags.json) {
      ctx.io.out(JSON.stringify(created));
    } else {
      const bound = created.node_id ? ` for node ${created.node_id}` : "";
      ctx.io.out(
        `Created ${created.scope} token "${clean(created.name)}" (${created.id})${bound}:`,
      );
      ctx.io.out(created.token);
    }
    return EXIT_OK;
  },
});

const list = defineCommand({
  name: "token list",
  summary: "the tokens (never their secrets)",
  examples: ["gpuctl token list"],
  flags: DATA_FLAGS,
  async run({ flags }, ctx) {
    const client = await connect(flags, ctx);
    const page = await client.get<Page<TokenInfo>>("/api/tokens");
    const now = ctx.now();
    printPage(ctx, flags.json, page, [
      { header: "ID", cell: (t) => clean(t.id) },
      { header: "NAME", cell: (t) => clean(t.name), flex: true },
      { header: "SCOPE", cell: (t) => t.scope },
      { header: "NODE", cell: (t) => clean(t.node_id ?? "") },
      { header: "CREATED", cell: (t) => ago(t.created_at, now) },
      { header: "LAST USED", cell: (t) => t.last_used_at ? ago(t.last_used_at, now) : "never" },
      { header: "EXPIRES", cell: (t) => clean(t.expires_at ?? "") },
      { header: "BUDGET", cell: (t) => budgetText(t.budget) },
    ], "No tokens.");
    return EXIT_OK;
  },
});

const revoke = defineCommand({
  name: "token revoke",
  summary: "delete tokens: they stop working at once",
  args: ["ID…"],
  examples: ["gpuctl token revoke t-4d5e6f7a8b9c"],
  flags: DATA_FLAGS,
  async run({ flags, args }, ctx) {
    const client = await connect(flags, ctx);
    for (const id of args) {
      const answer = await client.delete<{ deleted: string }>(
        `/api/tokens/${encodeURIComponent(id)}`,
      );
      if (flags.json) ctx.io.out(JSON.stringify(answer));
      else ctx.io.out(`Revoked token ${clean(answer.deleted)}`);
    }
    return EXIT_OK;
  },
});

const budget = defineCommand({
  name: "token budget",
  summary: "change a token's budget: the limits given change, `none` removes one",
  args: ["ID"],
  description: `Each --max-… flag given sets that limit (none removes it); the others stay.
The jobs already queued and running are held to the new budget from the next scheduling pass
on. Needs an admin token.`,
  examples: [
    "gpuctl token budget t-4d5e6f7a8b9c --max-gpus 4 --max-queued 20",
    "gpuctl token budget t-4d5e6f7a8b9c --max-wall-clock none",
  ],
  flags: { ...BUDGET_FLAGS, ...DATA_FLAGS },
  async run({ flags, args }, ctx) {
    const change = budgetFromFlags(flags);
    if (Object.keys(change).length === 0) {
      throw new UsageError("say which limit to change: --max-gpus N, --max-queued N, …");
    }
    const client = await connect(flags, ctx);
    const token = await client.put<TokenInfo>(
      `/api/tokens/${encodeURIComponent(args[0])}/budget`,
      change,
    );
    if (flags.json) ctx.io.out(JSON.stringify(token));
    else {ctx.io.out(
        `Token "${clean(token.name)}" (${token.id}) budget: ${budgetText(token.budget)}`,
      );}
    return EXIT_OK;
  },
});

/** `gpuctl token`. */
export const tokenCommand = defineGroup(
  "token",
  "create, list and revoke tokens, and change their budgets",
  [create, list, revoke, budget],
  "gpuctl token create --scope write --name laptop",
);
