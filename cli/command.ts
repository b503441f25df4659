// What every `gpuctl` command is given and returns. Commands never print or read the
// environment themselves: `main.ts` hands them the environment's values and the output.

/** Environment variables as `main.ts` read them (a plain map in tests). */
export type CliEnv = Readonly<Record<string, string | undefined>>;

/** Where a command writes: one call per line, no trailing newline. */
export interface Output {
  out(line: string): void;
  err(line: string): void;
}

/** What a command runs with; every effect on the world outside files goes through here. */
export interface CommandContext {
  env: CliEnv;
  io: Output;
  /** The clock, Unix ms. */
  now: () => number;
  /** HTTP; tests may route it to an in-process server. @default globalThis.fetch */
  fetch?: typeof fetch;
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
}

/** Exit codes: 0 done, 1 the operation failed, 2 the command line was wrong. */
export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A command line that cannot be run as given; `gpuctl` exits 2 and points at `--help`. */
export class UsageError extends Error {
  override name = "UsageError";
}
