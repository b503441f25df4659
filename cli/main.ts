// deno-lint-ignore-file no-console -- the CLI's entry point is where it talks to its user
/**
 * `gpuctl`: the command line of the gpuctl control plane.
 *
 * `deno run --allow-net --allow-read --allow-write --allow-env --allow-run cli/main.ts <command> …`
 *
 * The only CLI file that reads the environment or prints: `runCli` takes both as values,
 * so tests run commands in-process with a map for an environment and a list for output.
 *
 * @module
 */

import {
  type Command,
  type CommandContext,
  EXIT_FAILURE,
  EXIT_OK,
  EXIT_USAGE,
  UsageError,
} from "./command.ts";
import { importRunCommand } from "./commands/import_run.ts";
import { mcpCommand } from "./commands/mcp.ts";
import { syncCommand } from "./commands/sync.ts";
import { tokenCommand } from "./commands/token.ts";
import { wantsHelp } from "./flags.ts";

/** Every command, in the order `gpuctl --help` lists them. */
export const COMMANDS: readonly Command[] = [
  importRunCommand,
  syncCommand,
  tokenCommand,
  mcpCommand,
];

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "usage: gpuctl <command> [options]",
    "",
    "commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Run gpuctl <command> --help for a command's options.",
    "The server and token come from --server/--token, else GPUCTL_SERVER_URL/GPUCTL_TOKEN,",
    "else $GPUCTL_HOME/cli.yaml (server_url:, token:), else, on the server's host,",
    "$GPUCTL_HOME/server.json (the running server's URL) and $GPUCTL_HOME/server.yaml.",
    "GPUCTL_HOME defaults to ~/.gpuctl.",
  ].join("\n");
}

/** Runs one command line; resolves to the exit code (0 done, 1 failed, 2 usage error). */
export async function runCli(argv: string[], ctx: CommandContext): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    (name === undefined ? ctx.io.err : ctx.io.out)(usage());
    return name === undefined ? EXIT_USAGE : EXIT_OK;
  }
  const command = COMMANDS.find((c) => c.name === name);
  if (!command) {
    ctx.io.err(`gpuctl: unknown command "${name}"\n\n${usage()}`);
    return EXIT_USAGE;
  }
  if (wantsHelp(args)) {
    ctx.io.out(command.help);
    return EXIT_OK;
  }
  try {
    return await command.run(args, ctx);
  } catch (err) {
    if (err instanceof UsageError) {
      ctx.io.err(`gpuctl ${name}: ${err.message}`);
      ctx.io.err(`Run "gpuctl ${name} --help" for usage.`);
      return EXIT_USAGE;
    }
    ctx.io.err(`gpuctl ${name}: ${describeError(err)}`);
    return EXIT_FAILURE;
  }
}

// The message, and the causes' messages where they add something.
function describeError(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e !== undefined && parts.length < 4; e = (e as Error)?.cause) {
    const message = e instanceof Error ? e.message : String(e);
    if (!parts.some((p) => p.includes(message))) parts.push(message);
  }
  return parts.join(": ");
}

if (import.meta.main) {
  const code = await runCli(Deno.args, {
    env: Deno.env.toObject(),
    io: { out: (line) => console.log(line), err: (line) => console.error(line) },
    now: Date.now,
  });
  Deno.exit(code);
}
