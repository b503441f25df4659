// What every `gpuctl` command is given and returns. Commands never print or read the
// environment themselves: `main.ts` hands them the environment's values and the output.

/** Environment variables as `main.ts` read them (a plain map in tests). */
export type CliEnv = Readonly<Record<string, string | undefined>>;

/** Where a command writes: one call per line, no trailing newline. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
  /**
   * Replaces the transient status line (a progress bar) on a terminal's stderr; "" clears
   * it. Absent when stderr is not a terminal: then nothing transient is shown.
   */
  status?(text: string): void;
}

/** What a command runs with; every effect on the world outside files goes through here. */
export interface CommandContext {
  env: CliEnv;
  io: Output;
  /** The clock, Unix ms. */
  now: () => number;
  /** HTTP; tests may route it to an in-process server. @default globalThis.fetch */
  fetch?: typeof fetch;
  /** The width of the terminal stdout is; absent when stdout is not a terminal. */
  columns?: number;
  /** Whether to colour output (stdout is a terminal and NO_COLOR is unset). @default false */
  color?: boolean;
  /** The folder the command runs in. @default Deno.cwd() */
  cwd?: string;
  /** Aborted when the user interrupts (Ctrl-C): long-running commands stop and return. */
  signal?: AbortSignal;
}

/** One `gpuctl <name>` command. */
export interface Command {
  name: string;
  /** One line for `gpuctl --help`. */
  summary: string;
  /** The whole `gpuctl <name> --help` text. */
  help: string;
  /** Runs with the arguments after the command name; resolves to the exit code. */
  run(args: string[], ctx: CommandContext): Promise<number>;
  /** Its subcommands (`job submit`, `job list`), for help and shell completions. */
  subcommands?: readonly Command[];
  /** Its flags as typed (`--name`, `-n`), for shell completions. */
  flags?: readonly string[];
}

/** Exit codes: 0 done, 1 the operation failed, 2 the command line was wrong. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** A long-running command (logs -f, --follow) stopped by Ctrl-C, as shells report SIGINT. */
export const EXIT_INTERRUPTED = 130;

/** A command line that cannot be run as given; `gpuctl` exits 2 and points at `--help`. */
export class UsageError extends Error {
  override name = "UsageError";
}
