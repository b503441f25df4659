/**
 * Parameter importance as a simple ranking: Spearman's rank correlation of each parameter's
 * value with the trials' final metric. Strings and booleans rank in their listed order.
 * A rough guide for the next sweep, not a causal claim. Pure.
 *
 * @module
 */
import type { ParameterImportance, ParamValue } from "../../protocol/sweeps.ts";

/** Ranks with ties averaged (1-based), as Spearman's coefficient wants. */
function ranks(xs: number[]): number[] {
  const order = xs.map((x, i) => [x, i] as const).sort((a, b) => a[0] - b[0]);
  const out = new Array<number>(xs.length);
  for (let i = 0; i < order.length;) {
    let j = i;
    while (j + 1 < order.length && order[j + 1][0] === order[i][0]) j++;
    const r = (i + j) / 2 + 1;
    for (let k = i; k <= j; k++) out[order[k][1]] = r;
    i = j + 1;
  }
  return out;
}

function pearson(a: number[], b: number[]): number | null {
  const n = a.length;
  const ma = a.reduce((s, x) => s + x, 0) / n;
  const mb = b.reduce((s, x) => s + x, 0) / n;
  let num = 0, da = 0, db = 0;
  for (let i = 0; i < n; i++) {
    num += (a[i] - ma) * (b[i] - mb);
    da += (a[i] - ma) ** 2;
    db += (b[i] - mb) ** 2;
  }
  return da === 0 || db === 0 ? null : num / Math.sqrt(da * db);
}

/** Spearman's rank correlation; null with fewer than 3 pairs or no spread. */
export function spearman(xs: number[], ys: number[]): number | null {
  if (xs.length < 3) return null;
  const r = pearson(ranks(xs), ranks(ys));
  return r === null ? null : Number(r.toFixed(3));
}

/**
 * Each parameter's correlation with the final metric over the trials that have one (NaN
 * metrics left out), strongest first; parameters with no estimate last.
 */
export function parameterImportance(
  trials: { params: Record<string, ParamValue>; final: number | null }[],
  names: string[],
): ParameterImportance[] {
  const scored = trials.filter((t) => t.final !== null && Number.isFinite(t.final));
  const out = names.map((parameter) => {
    const listed = [...new Set(scored.map((t) => t.params[parameter]))];
    const numeric = (v: ParamValue) => typeof v === "number" ? v : listed.indexOf(v);
    const xs = scored.map((t) => numeric(t.params[parameter]));
    return {
      parameter,
      correlation: spearman(xs, scored.map((t) => t.final!)),
      trials: scored.length,
    };
  });
  return out.sort((a, b) =>
    (a.correlation === null ? 1 : 0) - (b.correlation === null ? 1 : 0) ||
    Math.abs(b.correlation ?? 0) - Math.abs(a.correlation ?? 0)
  );
}
