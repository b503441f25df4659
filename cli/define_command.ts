// One declaration per command: its flags are zod schemas with a line of help each, and from
// that one record come the parser's options (`node:util` parseArgs), the validation (one
// zod object), the `--help` text and the shell completions. Nothing about a flag is written
// twice.

import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { z } from "zod";
import { type Command, type CommandContext, EXIT_OK, UsageError } from "./command.ts";
import { wrap } from "./output.ts";

/** One flag: its schema (which also says its kind), a line of help, a short name, a value name. */
export interface FlagSpec<S extends z.ZodType = z.ZodType> {
  schema: S;
  help: string;
  /** A one-letter alias: `-n`. */
  short?: string;
  /** The value's name in help (`NAME`); booleans have none. */
  arg?: string;
}

/** Flags by their camelCase name; each is typed as `--kebab-case`. */
export type FlagSpecs = Record<string, FlagSpec>;

/** The validated values of a command's flags. */
export type FlagValues<F extends FlagSpecs> = { [K in keyof F]: z.output<F[K]["schema"]> };

/** What a command's `run` receives. */
export interface CommandInput<F extends FlagSpecs> {
  flags: FlagValues<F>;
  /** The positionals, checked against `args`. */
  args: string[];
  /** Everything after `--` (only for commands that declare `rest`). */
  rest: string[];
}

/** A command, declared once. */
export interface CommandSpec<F extends FlagSpecs> {
  /** `status`, or `job submit` for a subcommand. */
  name: string;
  summary: string;
  /**
   * The positionals' names: `JOB`, `[RUN]` (optional), `RUN…` (one or more), `[RUN…]`.
   * @default none
   */
  args?: string[];
  /** The name of what follows `--` (`CMD…`): the command takes an argv after `--`. */
  rest?: string;
  /** Paragraphs after the usage line. */
  description?: string;
  /** At least one example command line (each is shown after `$ `). */
  examples: string[];
  flags: F;
  run(input: CommandInput<F>, ctx: CommandContext): Promise<number>;
}

/** The `--help`/`-h` flag every command has (handled before parsing). */
const HELP_FLAG = "  -h, --help";

/** True when the arguments ask for help (`--help`, `-h`) before any `--`. */
export function wantsHelp(args: string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/** `maxAttempts` → `max-attempts`. */
export function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

type Kind = "boolean" | "string" | "multiple";

/** How parseArgs reads a flag, from its schema: booleans, lists (repeatable), else a string. */
export function flagKind(schema: z.ZodType): Kind {
  // deno-lint-ignore no-explicit-any -- zod's internal definition is walked generically
  let def: any = (schema as any)._zod.def;
  for (;;) {
    switch (def.type) {
      case "optional":
      case "nullable":
      case "default":
      case "prefault":
      case "readonly":
      case "catch":
        def = def.innerType._zod.def;
        continue;
      case "pipe":
        def = def.in._zod.def;
        continue;
      case "boolean":
        return "boolean";
      case "array":
        return "multiple";
      default:
        return "string";
    }
  }
}

interface Positionals {
  min: number;
  max: number;
}

function positionals(names: string[]): Positionals {
  let min = 0;
  let max = 0;
  for (const n of names) {
    const optional = n.startsWith("[");
    const variadic = n.endsWith("…") || n.endsWith("…]");
    if (!optional) min++;
    max = variadic ? Infinity : max + 1;
  }
  return { min, max };
}

/** The width help text is wrapped to. */
const HELP_WIDTH = 92;

/** The `--help` text of a declaration. */
export function helpText<F extends FlagSpecs>(spec: CommandSpec<F>): string {
  const entries = Object.entries(spec.flags).map(([key, f]) => {
    const name = `--${kebab(key)}`;
    const left = `${f.short ? `-${f.short}, ` : "    "}${name}${f.arg ? ` ${f.arg}` : ""}`;
    const repeat = flagKind(f.schema) === "multiple" ? " (repeatable)" : "";
    return [left, f.help + repeat];
  });
  const width = Math.max(HELP_FLAG.length - 2, ...entries.map(([l]) => l.length));
  const required = Object.entries(spec.flags)
    .filter(([, f]) => flagKind(f.schema) !== "boolean" && !f.schema.safeParse(undefined).success)
    .map(([key, f]) => `--${kebab(key)} ${f.arg ?? "VALUE"}`);
  const usage = [
    `usage: gpuctl ${spec.name}`,
    ...(spec.args ?? []),
    ...required,
    entries.length > required.length ? "[options]" : "",
    spec.rest
      ? (spec.rest.startsWith("[") ? `[-- ${spec.rest.slice(1, -1)}]` : `-- ${spec.rest}`)
      : "",
  ].filter(Boolean).join(" ");
  return [
    usage,
    "",
    spec.summary.charAt(0).toUpperCase() + spec.summary.slice(1) + ".",
    ...(spec.description ? ["", spec.description] : []),
    "",
    "options:",
    ...entries.flatMap(([l, h]) =>
      wrap(h, HELP_WIDTH - width - 4).map((line, i) =>
        `  ${(i === 0 ? l : "").padEnd(width)}  ${line}`.trimEnd()
      )
    ),
    `${HELP_FLAG.padEnd(width + 2)}  this help`,
    "",
    spec.examples.length === 1 ? "example:" : "examples:",
    ...spec.examples.map((e) => `  $ ${e}`),
  ].join("\n");
}

/** Parses and validates `args` against a declaration; every problem is a UsageError. */
export function parseCommandLine<F extends FlagSpecs>(
  spec: CommandSpec<F>,
  args: string[],
): CommandInput<F> {
  const cut = spec.rest === undefined ? -1 : args.indexOf("--");
  const before = cut === -1 ? args : args.slice(0, cut);
  const rest = cut === -1 ? [] : args.slice(cut + 1);
  const options: ParseArgsOptionsConfig = {};
  const byOption: Record<string, string> = {};
  for (const [key, f] of Object.entries(spec.flags)) {
    const kind = flagKind(f.schema);
    options[kebab(key)] = {
      type: kind === "boolean" ? "boolean" : "string",
      ...(kind === "multiple" ? { multiple: true } : {}),
      ...(f.short ? { short: f.short } : {}),
    };
    byOption[kebab(key)] = key;
  }
  let parsed;
  try {
    parsed = parseArgs({ args: before, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  const values: Record<string, unknown> = {};
  for (const [option, value] of Object.entries(parsed.values)) values[byOption[option]] = value;
  const shape = Object.fromEntries(Object.entries(spec.flags).map(([k, f]) => [k, f.schema]));
  const result = z.object(shape).safeParse(values);
  if (!result.success) {
    const issue = result.error.issues[0];
    const [key, ...path] = issue.path.map(String);
    const flag = key === undefined ? "flags" : `--${kebab(key)}`;
    const where = path.length && !/^\d+$/.test(path.join("")) ? `.${path.join(".")}` : "";
    throw new UsageError(`${flag}${where} ${issue.message}`);
  }
  const { min, max } = positionals(spec.args ?? []);
  const got = parsed.positionals;
  if (got.length < min) {
    const missing = (spec.args ?? []).filter((n) => !n.startsWith("["))[got.length];
    throw new UsageError(`${missing.replace("…", "")} is required`);
  }
  if (got.length > max) {
    const extra = got.slice(max).join(" ");
    throw new UsageError(
      max === 0 ? `takes no arguments, got: ${extra}` : `too many arguments: ${extra}` +
        (spec.rest ? ` (put the command after --)` : ""),
    );
  }
  if (spec.rest !== undefined && cut !== -1 && rest.length === 0) {
    throw new UsageError(`nothing after --: give the ${spec.rest.replace(/[[\]…]/g, "")} to run`);
  }
  return { flags: result.data as FlagValues<F>, args: got, rest };
}

/** Turns a declaration into a command. */
export function defineCommand<F extends FlagSpecs>(spec: CommandSpec<F>): Command {
  const help = helpText(spec);
  const flags = Object.entries(spec.flags).flatMap(([k, f]) => [
    `--${kebab(k)}`,
    ...(f.short ? [`-${f.short}`] : []),
  ]);
  return {
    name: spec.name.split(" ").at(-1)!,
    summary: spec.summary,
    help,
    flags: [...flags, "--help"],
    run: (args, ctx) => spec.run(parseCommandLine(spec, args), ctx),
  };
}

/** A command made of subcommands: `gpuctl job submit|list|show|cancel|retry`. */
export function defineGroup(
  name: string,
  summary: string,
  subcommands: readonly Command[],
  example: string,
): Command {
  const width = Math.max(...subcommands.map((c) => c.name.length));
  const help = [
    `usage: gpuctl ${name} <${subcommands.map((c) => c.name).join("|")}> [options]`,
    "",
    summary.charAt(0).toUpperCase() + summary.slice(1) + ".",
    "",
    "commands:",
    ...subcommands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    "",
    `Run gpuctl ${name} <command> --help for a command's options.`,
    "",
    "example:",
    `  $ ${example}`,
  ].join("\n");
  return {
    name,
    summary,
    help,
    subcommands,
    async run(args, ctx) {
      const [sub, ...rest] = args;
      if (sub === undefined) {
        throw new UsageError(`say which: ${subcommands.map((c) => c.name).join(", ")}`);
      }
      if (sub === "--help" || sub === "-h" || sub === "help") {
        ctx.io.out(help);
        return EXIT_OK;
      }
      const command = subcommands.find((c) => c.name === sub);
      if (!command) {
        throw new UsageError(
          `unknown command "${name} ${sub}": use ${subcommands.map((c) => c.name).join(", ")}`,
        );
      }
      if (wantsHelp(rest)) {
        ctx.io.out(command.help);
        return EXIT_OK;
      }
      return await command.run(rest, ctx);
    },
  };
}
