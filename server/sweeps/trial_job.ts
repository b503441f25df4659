/**
 * A trial's job: the sweep's base submission with the trial's parameters passed as
 * `--NAME VALUE` arguments appended to the command, as `GPUCTL_PARAM_NAME` variables, or
 * both. Pure.
 *
 * @module
 */
import type { JobSubmission } from "../../protocol/rest/jobs.ts";
import type { ParamValue } from "../../protocol/sweeps.ts";

/** `lr` → `GPUCTL_PARAM_LR`, `model.depth` → `GPUCTL_PARAM_MODEL_DEPTH`. */
export function paramEnvName(name: string): string {
  return `GPUCTL_PARAM_${name.toUpperCase().replace(/[^A-Z0-9_]/g, "_")}`;
}

/** A value as text: numbers as JavaScript writes them (`0.0001`, `1e-7`), booleans as words. */
export const paramText = (v: ParamValue) => String(v);

/** Single quotes for a shell: `it's` → `'it'\''s'`. */
export const shellQuote = (s: string) =>
  /^[A-Za-z0-9_./:=@%+-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`;

/** The trial's submission: named after the sweep and trial, with its parameters passed in. */
export function trialSubmission(
  base: JobSubmission,
  sweep: { name: string; project: string; experiment: string | null },
  index: number,
  params: Record<string, ParamValue>,
  passAs: "args" | "env" | "both",
): JobSubmission {
  const entries = Object.entries(params);
  const label = entries.map(([k, v]) => `${k}=${paramText(v)}`).join(" ");
  let command = base.command;
  if (passAs !== "env") {
    const args = entries.flatMap(([k, v]) => [`--${k}`, paramText(v)]);
    command = typeof command === "string"
      ? `${command} ${args.map(shellQuote).join(" ")}`
      : [...command, ...args];
  }
  const env = { ...base.env };
  if (passAs !== "args") { for (const [k, v] of entries) env[paramEnvName(k)] = paramText(v); }
  return {
    ...base,
    name: `${sweep.name} #${index + 1} ${label}`.slice(0, 200),
    command,
    env,
    project: sweep.project,
    experiment: sweep.experiment ?? undefined,
  };
}
