/**
 * Series as a page carries them in its HTML, packed: steps as differences from the step
 * before (small integers), every other column as little-endian float64 in base64 (about 11
 * characters a number instead of up to 24 as JSON, exact, NaN and ±Infinity as themselves).
 * The server packs what it renders; the panel unpacks straight into its own columns. Pure;
 * no DOM (the server and the browser both use it).
 *
 * @module
 */
import type { ApiSeries } from "./panel_types.ts";
import { decodeValue, type PointSeries } from "./series.ts";

/** One series of `metrics:query`, packed for a page's HTML. */
export interface PackedSeries {
  run_id: string;
  key: string;
  /** Each step minus the one before it (the first as it is). */
  step_deltas: number[];
  /** Unix seconds, float64 base64. */
  wall_times: string;
  /** Values, float64 base64. */
  values: string;
  /** Each kept point's bucket extremes (downsampled series only), float64 base64. */
  min?: string;
  max?: string;
  total_points: number;
  downsampled: boolean;
}

/** `bytes` in base64 (RFC 4648, with padding). */
function toBase64(bytes: Uint8Array): string {
  const parts: string[] = [];
  // A chunk a multiple of 3 bytes long, so only the last one is padded.
  for (let i = 0; i < bytes.length; i += 3 * 8192) {
    parts.push(btoa(String.fromCharCode(...bytes.subarray(i, i + 3 * 8192))));
  }
  return parts.join("");
}

/** The bytes of base64 `text`; throws naming what is wrong with it. */
function fromBase64(text: string): Uint8Array {
  if (text.length % 4 !== 0) throw new Error(`packed series: base64 of length ${text.length}`);
  let binary: string;
  try {
    binary = atob(text);
  } catch {
    const bad = /[^A-Za-z0-9+/=]/.exec(text)?.[0] ?? "=";
    throw new Error(`packed series: "${bad}" is not base64 here`);
  }
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

/** `values` as little-endian float64 in base64. */
export function packNumbers(values: readonly number[]): string {
  const bytes = new Uint8Array(values.length * 8);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) view.setFloat64(i * 8, values[i], true);
  return toBase64(bytes);
}

/** The numbers `packNumbers` wrote. */
export function unpackNumbers(text: string): number[] {
  const bytes = fromBase64(text);
  if (bytes.length % 8 !== 0) throw new Error(`packed series: ${bytes.length} bytes`);
  const view = new DataView(bytes.buffer);
  const out = new Array<number>(bytes.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = view.getFloat64(i * 8, true);
  return out;
}

/** A series of `metrics:query` packed for a page's HTML. */
export function packSeries(s: ApiSeries): PackedSeries {
  const deltas = new Array<number>(s.steps.length);
  for (let i = 0; i < s.steps.length; i++) deltas[i] = s.steps[i] - (i ? s.steps[i - 1] : 0);
  const packed: PackedSeries = {
    run_id: s.run_id,
    key: s.key,
    step_deltas: deltas,
    wall_times: packNumbers(s.wall_times),
    values: packNumbers(s.values.map(decodeValue)),
    total_points: s.total_points,
    downsampled: s.downsampled,
  };
  if (s.min) packed.min = packNumbers(s.min.map(decodeValue));
  if (s.max) packed.max = packNumbers(s.max.map(decodeValue));
  return packed;
}

/** A packed series as the panel draws it (the same as `fromApi` of the series packed). */
export function unpackSeries(p: PackedSeries): PointSeries {
  const steps = new Array<number>(p.step_deltas.length);
  let step = 0;
  for (let i = 0; i < steps.length; i++) steps[i] = step += p.step_deltas[i];
  return {
    runId: p.run_id,
    key: p.key,
    steps,
    walls: unpackNumbers(p.wall_times),
    values: unpackNumbers(p.values),
    min: p.min !== undefined ? unpackNumbers(p.min) : null,
    max: p.max !== undefined ? unpackNumbers(p.max) : null,
    total: p.total_points,
    downsampled: p.downsampled,
  };
}
