/**
 * `--param` flags of `gpuctl sweep create` as sweep parameters:
 *
 * - `lr=1e-4:1e-2:log:5`: a range (`linear` by default, or `log`), with a grid `count`;
 * - `layers=2:8:int`: every integer of a range (sampled uniformly in a random sweep);
 * - `seed=1,2,3`, `opt=adam,sgd`: listed values (numbers, `true`/`false`, else strings).
 *
 * @module
 */
import type { SweepParameter } from "../protocol/sweeps.ts";

/** One listed value: a number when it reads as one, a boolean for true/false, else text. */
function value(text: string): number | string | boolean {
  if (text === "true" || text === "false") return text === "true";
  const n = Number(text);
  return text.trim() !== "" && Number.isFinite(n) ? n : text;
}

/** Parses `NAME=SPEC`; throws an Error that quotes the flag and says what is wrong. */
export function parseSweepParam(flag: string): [string, SweepParameter] {
  const eq = flag.indexOf("=");
  if (eq <= 0) {
    throw new Error(`--param "${flag}": expected NAME=SPEC, e.g. lr=1e-4:1e-2:log:5 or seed=1,2,3`);
  }
  const name = flag.slice(0, eq);
  const spec = flag.slice(eq + 1);
  if (spec === "") throw new Error(`--param "${flag}": no values after "="`);
  if (spec.includes(",") || !spec.includes(":")) {
    return [name, { values: spec.split(",").map(value) }];
  }
  const parts = spec.split(":");
  const [min, max] = parts.slice(0, 2).map(Number);
  if (!Number.isFinite(min) || !Number.isFinite(max)) {
    throw new Error(`--param "${flag}": a range is MIN:MAX[:linear|log|int][:COUNT] with numbers`);
  }
  let scale: "linear" | "log" | "int" = "linear";
  let count: number | undefined;
  for (const p of parts.slice(2)) {
    if (p === "linear" || p === "log" || p === "int") scale = p;
    else if (/^\d+$/.test(p) && Number(p) > 0) count = Number(p);
    else {
      throw new Error(
        `--param "${flag}": "${p}" is neither a scale (linear, log, int) nor a count`,
      );
    }
  }
  if (parts.length > 4) throw new Error(`--param "${flag}": too many ":" parts`);
  if (scale === "int") return [name, { distribution: "int", min, max }];
  return [name, count === undefined ? { min, max, scale } : { min, max, scale, count }];
}

/** Every `--param` flag as the request's `parameters`; a name given twice is an error. */
export function parseSweepParams(flags: string[]): Record<string, SweepParameter> {
  const out: Record<string, SweepParameter> = {};
  for (const f of flags) {
    const [name, p] = parseSweepParam(f);
    if (name in out) throw new Error(`--param "${name}" is given twice`);
    out[name] = p;
  }
  return out;
}
