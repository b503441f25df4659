// Test-only: the real event files in tests/fixtures/tfevents (read-only; tests copy them
// into temp dirs before changing anything).

import { TFEVENTS, tfeventsPath } from "../../tests/fixtures/mod.ts";

/** Filesystem path of a fixture, relative to the fixture folder. */
export const fixturePath = tfeventsPath;

/** One line of expected-scalars.jsonl, as decoded by an independent reader. */
export interface ExpectedScalar {
  file: string;
  tag: string;
  step: number;
  wall_time: number;
  value: number;
}

/** Every line of expected-scalars.jsonl. */
export async function expectedScalars(): Promise<ExpectedScalar[]> {
  const text = await Deno.readTextFile(new URL("expected-scalars.jsonl", TFEVENTS));
  return text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
}

export const TORCH_OLDER = "torch-logs/events.out.tfevents.1662121387.DESKTOP-BD07O37.13672.0";
export const TORCH_NEWER = "torch-logs/events.out.tfevents.1662121954.DESKTOP-BD07O37.5556.0";
export const KERAS_TRAIN =
  "keras-exp0/train/events.out.tfevents.1690483602.e-bnbobg-5l77j-0.61366.2.v2";
export const KERAS_VALIDATION =
  "keras-exp0/validation/events.out.tfevents.1690483610.e-bnbobg-5l77j-0.61366.3.v2";

/** Float32 values decoded twice may differ in the last bits of their float64 printing. */
export function closeTo(actual: number, expected: number, relative = 1e-6): boolean {
  if (Number.isNaN(expected)) return Number.isNaN(actual);
  if (actual === expected) return true;
  return Math.abs(actual - expected) <= relative * Math.max(Math.abs(expected), Number.MIN_VALUE);
}
