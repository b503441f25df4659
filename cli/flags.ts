// Command-line flags: `node:util` parseArgs splits them, a zod schema checks them, and every
// problem becomes a UsageError that names the flag.

import { parseArgs, type ParseArgsOptionsConfig } from "node:util";
import { z } from "zod";
import { UsageError } from "./command.ts";

/** The flags every command that talks to a server accepts. */
export const CONNECTION_OPTIONS = {
  server: { type: "string" },
  token: { type: "string" },
} as const satisfies ParseArgsOptionsConfig;

/** Zod fields of `CONNECTION_OPTIONS`. */
export const connectionFlags = {
  server: z.string().trim().min(1, "must not be empty").optional(),
  token: z.string().trim().min(1, "must not be empty").optional(),
};

/** True when the arguments ask for help (`--help`, `-h`), wherever they stand. */
export function wantsHelp(args: string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === "--help" || a === "-h");
}

/**
 * Parses `args` with `options` and validates the flag values with `schema`; positionals are
 * returned as they are. Unknown flags, missing values and invalid values are UsageErrors.
 */
export function parseFlags<S extends z.ZodType>(
  args: string[],
  options: ParseArgsOptionsConfig,
  schema: S,
): { flags: z.infer<S>; positionals: string[] } {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
  const result = schema.safeParse(parsed.values);
  if (!result.success) {
    const issue = result.error.issues[0];
    const flag = issue.path.length ? `--${issue.path.map(String).join(".")}` : "flags";
    throw new UsageError(`${flag} ${issue.message}`);
  }
  return { flags: result.data, positionals: parsed.positionals };
}

/** A required text flag: "is required" when missing, "must not be empty" when blank. */
export function requiredText(max = 200) {
  return z.string({ error: "is required" }).trim().min(1, "must not be empty").max(
    max,
    `must be at most ${max} characters`,
  );
}

/** An optional text flag. */
export function optionalText(max = 200) {
  return requiredText(max).optional();
}
