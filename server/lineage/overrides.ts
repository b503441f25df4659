/**
 * What a fork changes of its parent's job: `--NAME VALUE` arguments, environment variables
 * and config values (recorded on the run, passed as `GPUCTL_PARAM_NAME`). Pure.
 *
 * @module
 */
import type { ForkOverrides } from "../../protocol/objects.ts";
import { invalidField } from "../errors.ts";
import { paramEnvName, shellQuote } from "../sweeps/trial_job.ts";

/** The parts of a job a fork starts from. */
export interface ForkBase {
  command: string[] | string;
  env: Record<string, string>;
  config: Record<string, unknown>;
}

/** A config value as an environment variable's text: strings as they are, the rest as JSON. */
export const configText = (v: unknown) => typeof v === "string" ? v : JSON.stringify(v);

/**
 * The child's command, environment and config. In an argv command, `--NAME` (or `--NAME=…`)
 * gets the new value in place, or `--NAME VALUE` is appended; a shell string gets
 * `--NAME 'VALUE'` appended (argparse and most parsers take the last one), and cannot have an
 * argument removed.
 */
export function applyOverrides(base: ForkBase, o: ForkOverrides): ForkBase {
  let command = base.command;
  for (const [name, value] of Object.entries(o.args ?? {})) {
    command = typeof command === "string"
      ? appendToShell(command, name, value)
      : setArg(command, name, value);
  }
  const env = { ...base.env };
  for (const [k, v] of Object.entries(o.env ?? {})) {
    if (v === null) delete env[k];
    else env[k] = v;
  }
  const config = { ...base.config };
  for (const [k, v] of Object.entries(o.args ?? {})) {
    if (v === null || v === false) delete config[k];
    else config[k] = v;
  }
  for (const [k, v] of Object.entries(o.config ?? {})) {
    config[k] = v;
    env[paramEnvName(k)] = configText(v);
  }
  return { command, env, config };
}

function appendToShell(
  command: string,
  name: string,
  value: string | number | boolean | null,
): string {
  if (value === null || value === false) {
    throw invalidField(
      "fork",
      `overrides.args.${name}`,
      "the parent's command is a shell string: an argument can be set there, not removed",
    );
  }
  return value === true
    ? `${command} --${name}`
    : `${command} --${name} ${shellQuote(String(value))}`;
}

/** `argv` with `--name` set to `value` (true: a bare flag; false or null: removed). */
export function setArg(
  argv: string[],
  name: string,
  value: string | number | boolean | null,
): string[] {
  const flag = `--${name}`;
  const out = [...argv];
  const at = out.findIndex((a) => a === flag || a.startsWith(`${flag}=`));
  // How many items the present flag takes: 1 for `--x=v` or a bare flag, 2 for `--x v`.
  const width = at < 0
    ? 0
    : out[at] !== flag || at + 1 >= out.length || out[at + 1].startsWith("--")
    ? 1
    : 2;
  if (value === null || value === false) {
    if (at >= 0) out.splice(at, width);
    return out;
  }
  if (value === true) {
    // A present `--x` stays as it is: what follows it may be a positional argument.
    if (at < 0) out.push(flag);
    else if (out[at] !== flag) out[at] = flag;
    return out;
  }
  const text = String(value);
  if (at < 0) out.push(flag, text);
  else if (out[at] !== flag) out[at] = `${flag}=${text}`;
  else out.splice(at, width, flag, text);
  return out;
}

/** A short label of what changed: `lr=0.001 +WARMUP=100 -DEBUG`. */
export function overridesLabel(o: ForkOverrides): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(o.args ?? {})) {
    parts.push(v === null || v === false ? `-${k}` : v === true ? `+${k}` : `${k}=${v}`);
  }
  for (const [k, v] of Object.entries(o.config ?? {})) parts.push(`${k}=${configText(v)}`);
  for (const [k, v] of Object.entries(o.env ?? {})) parts.push(v === null ? `-${k}` : `${k}=${v}`);
  return parts.join(" ");
}
