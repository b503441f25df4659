/** How the rules write numbers in event messages: values, percentages and minutes. */
import { fmtNumber } from "../../lib/format.ts";

/** A value in an event message, as gpuctl writes numbers (lib/format.ts): 0.07555161 → "0.07555". */
export const fmtValue = (value: number): string => fmtNumber(value);

/** A percentage with one decimal: 0.1159 → "11.6%". */
export function fmtPct(fraction: number): string {
  return `${(fraction * 100).toFixed(1)}%`;
}

/** Seconds as whole minutes when round, else one decimal: 900 → "15", 950 → "15.8". */
export function fmtMinutes(seconds: number): string {
  const minutes = seconds / 60;
  return Number.isInteger(minutes) ? String(minutes) : minutes.toFixed(1);
}
