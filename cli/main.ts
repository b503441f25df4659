// deno-lint-ignore-file no-console -- the CLI's entry point is where it talks to its user
/**
 * `gpuctl`: the command line of the gpuctl control plane.
 *
 * `deno task cli <command> …`, or installed: `deno install -g -n gpuctl <CLI_PERMISSIONS>
 * cli/main.ts`, or compiled into one file: `deno task compile`.
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
  EXIT_INTERRUPTED,
  EXIT_OK,
  EXIT_USAGE,
  type Output,
  UsageError,
} from "./command.ts";
import { backupAgentCommand, backupCommand } from "./commands/backup.ts";
import { checkpointCommand } from "./commands/checkpoint.ts";
import { completionsCommand } from "./commands/completions.ts";
import { agentCommand, serverCommand } from "./commands/daemons.ts";
import { eventCommand, eventHookCommand } from "./commands/event.ts";
import { importRunCommand } from "./commands/import_run.ts";
import { jobCommand } from "./commands/job.ts";
import { logsCommand } from "./commands/logs.ts";
import { nodeCommand } from "./commands/node.ts";
import { experimentCommand, metricCommand, projectCommand } from "./commands/project.ts";
import { runCommand } from "./commands/run.ts";
import { statusCommand } from "./commands/status.ts";
import { sweepCommand } from "./commands/sweep.ts";
import { mcpCommand } from "./commands/mcp.ts";
import { syncCommand } from "./commands/sync.ts";
import { tokenCommand } from "./commands/token.ts";
import { wantsHelp } from "./define_command.ts";
import { colourWanted } from "./output.ts";

/** Every command, in the order `gpuctl --help` lists them. */
export const COMMANDS: readonly Command[] = [
  statusCommand,
  nodeCommand,
  jobCommand,
  sweepCommand,
  logsCommand,
  runCommand,
  checkpointCommand,
  eventCommand,
  eventHookCommand,
  projectCommand,
  experimentCommand,
  metricCommand,
  importRunCommand,
  syncCommand,
  tokenCommand,
  mcpCommand,
  backupCommand,
  backupAgentCommand,
  serverCommand,
  agentCommand,
  completionsCommand(() => COMMANDS),
];

/**
 * The permissions `gpuctl` runs with, as `deno install` and `deno compile` are given them:
 * the CLI needs net, read, write, env and run (event-hook commands, tar, a server's pid);
 * `gpuctl server` and `gpuctl agent` add sys and ffi (NVML). deno.json's `cli` and
 * `compile` tasks and the README's install line use exactly these; a test keeps them so.
 */
export const CLI_PERMISSIONS: readonly string[] = [
  "--allow-net",
  "--allow-read",
  "--allow-write",
  "--allow-env",
  "--allow-run",
  "--allow-sys",
  "--allow-ffi",
];

function usage(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length));
  return [
    "usage: gpuctl <command> [options]",
    "",
    "commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    "Run gpuctl <command> --help for a command's options and an example.",
    "The server and token come from --server/--token, else GPUCTL_SERVER_URL/GPUCTL_TOKEN,",
    "else $GPUCTL_HOME/cli.yaml (server_url:, token:), else, on the server's host,",
    "$GPUCTL_HOME/server.json (the running server's URL) and $GPUCTL_HOME/server.yaml.",
    "GPUCTL_HOME defaults to ~/.gpuctl. Exit codes: 0 done, 1 failed, 2 wrong usage.",
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
  // A group answers --help itself: `gpuctl job submit --help` is submit's help.
  if (!command.subcommands && wantsHelp(args)) {
    ctx.io.out(command.help);
    return EXIT_OK;
  }
  const sub = command.subcommands?.find((c) => c.name === args[0]);
  const full = sub ? `${name} ${sub.name}` : name;
  try {
    return await command.run(args, ctx);
  } catch (err) {
    ctx.io.status?.("");
    if (err instanceof UsageError) {
      ctx.io.err(`gpuctl ${full}: ${err.message}`);
      ctx.io.err(`Run "gpuctl ${full} --help" for usage.`);
      return EXIT_USAGE;
    }
    ctx.io.err(`gpuctl ${full}: ${describeError(err)}`);
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

/**
 * Lines to stdout and stderr, and on a terminal's stderr one transient status line (a
 * progress bar) that is cleared before each line printed and drawn again after it.
 */
function terminalOutput(): Output {
  const encoder = new TextEncoder();
  const write = (stream: typeof Deno.stdout, text: string) =>
    stream.writeSync(encoder.encode(text));
  if (!Deno.stderr.isTerminal()) {
    return { out: (line) => console.log(line), err: (line) => console.error(line) };
  }
  let status = "";
  const around = (print: () => void) => {
    if (status) write(Deno.stderr, "\r\x1b[K");
    print();
    if (status) write(Deno.stderr, status);
  };
  return {
    out: (line) => around(() => console.log(line)),
    err: (line) => around(() => console.error(line)),
    status(text) {
      write(Deno.stderr, `\r\x1b[K${text}`);
      status = text;
    },
  };
}

/** The checkout's root, where `deno task cli` runs (null in a compiled binary). */
const CHECKOUT_ROOT = new URL("..", import.meta.url).protocol === "file:"
  ? decodeURIComponent(new URL("..", import.meta.url).pathname).replace(/\/+$/, "")
  : null;

/**
 * The folder the user typed the command in. `deno task cli …` runs in the checkout's root
 * and passes that folder as `INIT_CWD`; it is taken only when the process does run in the
 * checkout's root, so an `INIT_CWD` left in a shell never moves a command run elsewhere.
 */
export function invocationDir(
  env: Record<string, string | undefined>,
  cwd: string,
  checkoutRoot: string | null,
): string {
  const init = env.INIT_CWD;
  if (!init || !init.startsWith("/") || checkoutRoot === null) return cwd;
  return cwd.replace(/\/+$/, "") === checkoutRoot ? init : cwd;
}

if (import.meta.main) {
  const env = Deno.env.toObject();
  const interrupt = new AbortController();
  const onInterrupt = () => {
    if (interrupt.signal.aborted) Deno.exit(EXIT_INTERRUPTED);
    interrupt.abort();
    // A command that is not waiting on the signal (a plain request) just ends.
    Deno.unrefTimer(setTimeout(() => Deno.exit(EXIT_INTERRUPTED), 1000));
  };
  // Long commands (logs -f, event-hook) stop cleanly on the first Ctrl-C; others just end.
  const isDaemon = Deno.args[0] === "server" || Deno.args[0] === "agent";
  if (!isDaemon) Deno.addSignalListener("SIGINT", onInterrupt);
  // Relative paths (a job's working dir, import-run's folder, a backup's file) are the
  // user's: under `deno task cli` the process starts in the checkout's root instead.
  const cwd = invocationDir(env, Deno.cwd(), CHECKOUT_ROOT);
  if (!isDaemon && cwd !== Deno.cwd()) {
    try {
      Deno.chdir(cwd);
    } catch {
      // Gone or not enterable: the checkout's root stays the folder, as before.
    }
  }
  const tty = Deno.stdout.isTerminal();
  const code = await runCli(Deno.args, {
    env,
    io: terminalOutput(),
    now: Date.now,
    columns: tty ? Deno.consoleSize().columns : undefined,
    color: colourWanted(tty, env),
    cwd: Deno.cwd(),
    signal: interrupt.signal,
  });
  Deno.exit(code);
}
