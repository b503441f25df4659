/** Three significant digits without trailing zeros: 0.07555161 → "0.0756". */
export function fmtValue(value: number): string {
  if (!Number.isFinite(value)) return fmtNonFinite(value);
  if (value === 0) return "0";
  return String(Number(value.toPrecision(3)));
}

/** A percentage with one decimal: 0.1159 → "11.6%". */
export function fmtPct(fraction: number): string {
  return `${(fraction * 100).toFixed(1)}%`;
}

/** "NaN", "+Inf" or "-Inf", the way training logs spell them. */
export function fmtNonFinite(value: number): string {
  if (Number.isNaN(value)) return "NaN";
  return value > 0 ? "+Inf" : "-Inf";
}

/** Seconds as whole minutes when round, else one decimal: 900 → "15", 950 → "15.8". */
export function fmtMinutes(seconds: number): string {
  const minutes = seconds / 60;
  return Number.isInteger(minutes) ? String(minutes) : minutes.toFixed(1);
}
