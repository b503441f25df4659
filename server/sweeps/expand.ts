/**
 * A sweep's trials from its parameters: the grid's cartesian product, or a seeded random
 * sample. Pure: the same request and seed always give the same trials.
 *
 * @module
 */
import { MAX_TRIALS, type ParamValue, type SweepParameter } from "../../protocol/sweeps.ts";

/** Trials of a random sweep that names no count. */
export const DEFAULT_RANDOM_RUNS = 10;

export type Expansion =
  | { trials: Record<string, ParamValue>[] }
  | { field: string; problem: string };

/** Sampled floats keep 6 significant digits, so `--lr 0.000316228` reads well in a command. */
const tidy = (x: number) => Number(x.toPrecision(6));

/** The points of a range a grid takes, ends included. */
function rangePoints(min: number, max: number, count: number, log: boolean): number[] {
  if (count === 1) return [tidy(log ? Math.sqrt(min * max) : (min + max) / 2)];
  return Array.from({ length: count }, (_, i) => {
    const t = i / (count - 1);
    return tidy(
      log ? Math.exp(Math.log(min) + t * (Math.log(max) - Math.log(min))) : min + t * (max - min),
    );
  });
}

/** The values a grid takes for one parameter, or why it has none. */
function gridValues(
  name: string,
  p: SweepParameter,
): ParamValue[] | { field: string; problem: string } {
  if ("values" in p) return p.values;
  if ("distribution" in p) {
    if (p.distribution !== "int") {
      return {
        field: `parameters.${name}`,
        problem:
          `a ${p.distribution} distribution cannot be a grid; use method "random", or give values or a range with a count`,
      };
    }
    const n = Math.floor(p.max) - Math.ceil(p.min) + 1;
    if (n > MAX_TRIALS) {
      return { field: `parameters.${name}`, problem: `${n} integers are more than ${MAX_TRIALS}` };
    }
    return Array.from({ length: n }, (_, i) => Math.ceil(p.min) + i);
  }
  if (p.count === undefined) {
    return { field: `parameters.${name}.count`, problem: "is required for a grid over a range" };
  }
  return rangePoints(p.min, p.max, p.count, p.scale === "log");
}

/** A small seeded generator (mulberry32): uniform floats in [0, 1). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function sample(p: SweepParameter, rnd: () => number): ParamValue {
  if ("values" in p) return p.values[Math.floor(rnd() * p.values.length)];
  if ("distribution" in p) {
    if (p.distribution === "int") {
      const lo = Math.ceil(p.min);
      return lo + Math.floor(rnd() * (Math.floor(p.max) - lo + 1));
    }
    if (p.distribution === "log_uniform") {
      return tidy(Math.exp(Math.log(p.min) + rnd() * (Math.log(p.max) - Math.log(p.min))));
    }
    return tidy(p.min + rnd() * (p.max - p.min));
  }
  const log = p.scale === "log";
  if (p.count !== undefined) {
    const points = rangePoints(p.min, p.max, p.count, log);
    return points[Math.floor(rnd() * points.length)];
  }
  return tidy(
    log
      ? Math.exp(Math.log(p.min) + rnd() * (Math.log(p.max) - Math.log(p.min)))
      : p.min + rnd() * (p.max - p.min),
  );
}

/** The trials of a sweep: every combination (grid) or `runs` samples (random, seeded). */
export function expandTrials(
  parameters: Record<string, SweepParameter>,
  method: "grid" | "random",
  options: { runs?: number; seed?: number } = {},
): Expansion {
  const names = Object.keys(parameters);
  if (method === "random") {
    const rnd = seededRandom(options.seed ?? 0);
    const runs = options.runs ?? DEFAULT_RANDOM_RUNS;
    return {
      trials: Array.from(
        { length: runs },
        () => Object.fromEntries(names.map((n) => [n, sample(parameters[n], rnd)])),
      ),
    };
  }
  let trials: Record<string, ParamValue>[] = [{}];
  for (const n of names) {
    const vs = gridValues(n, parameters[n]);
    if (!Array.isArray(vs)) return vs;
    if (trials.length * vs.length > MAX_TRIALS) {
      return {
        field: "parameters",
        problem:
          `the grid has more than ${MAX_TRIALS} trials (${trials.length * vs.length} so far); ` +
          `use fewer values, or method "random" with runs`,
      };
    }
    trials = trials.flatMap((t) => vs.map((v) => ({ ...t, [n]: v })));
  }
  if (options.runs !== undefined && options.runs < trials.length) {
    trials = trials.slice(0, options.runs);
  }
  return { trials };
}
