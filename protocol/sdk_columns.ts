/**
 * The columnar form of an SDK batch's metric points (`columns`), which the Python SDK sends
 * because packing a run of `log` calls into arrays costs the training process far less than
 * writing each point as JSON. A group holds the calls that logged the same keys: `n` steps
 * and `n` wall times, and for each key `n` values, every array the base64 of 8-byte
 * little-endian numbers (int64 steps, float64 wall times and values, NaN and ±Infinity as
 * they are):
 *
 * ```json
 * {"columns": [{"keys": ["loss", "lr"], "steps": "<base64>", "wall_times": "<base64>",
 *               "values": ["<base64 of loss>", "<base64 of lr>"]}]}
 * ```
 *
 * stands for the points `{key, step: steps[i], value: values[k][i], wall_time:
 * wall_times[i]}`, row by row (the order of the calls), each row's keys in `keys` order.
 * The receivers decode them here into the row form (`points`) they have always taken, so
 * what is stored, forwarded and spooled is the same as for a batch sent as rows.
 */
import { encodeMetricValue, type WireMetricValue } from "./metric_value.ts";
import { metricKey } from "./rest/sdk.ts";

/** A point in the row form, as the JSON of a batch carries it (NaN spelled "NaN"). */
export interface RowPoint {
  key: string;
  step: number;
  value: WireMetricValue;
  wall_time: number;
}

/** One refused group: where the first fault is (`columns.0.steps.7`) and why. */
export interface ColumnRefusal {
  path: string;
  message: string;
}

/** The fields of a column group. */
const GROUP_FIELDS = ["keys", "steps", "wall_times", "values"] as const;

/** Base64 with padding, nothing else (no whitespace, no URL alphabet). */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Bytes per number in a column. */
const WIDTH = 8;

/** A problem found in a group, with the path below the group it is at. */
class GroupFault extends Error {
  constructor(readonly at: string, message: string) {
    super(message);
  }
}

/**
 * The points of `columns` (the value of a batch's `columns` field), at most `room` of them.
 * A group with any fault is refused whole, named by the path of its first fault; the
 * others are kept.
 */
export function decodeColumns(
  columns: unknown,
  room: number,
): { points: RowPoint[]; refused: ColumnRefusal[] } {
  const points: RowPoint[] = [];
  const refused: ColumnRefusal[] = [];
  if (!Array.isArray(columns)) {
    return { points, refused: [{ path: "columns", message: "must be an array of groups" }] };
  }
  for (const [g, group] of columns.entries()) {
    try {
      const rows = decodeGroup(group);
      if (rows.length > room - points.length) {
        throw new GroupFault(
          "",
          `holds ${rows.length} points, past the ${room} more this batch may carry`,
        );
      }
      for (const row of rows) points.push(row);
    } catch (err) {
      if (!(err instanceof GroupFault)) throw err;
      refused.push({ path: `columns.${g}${err.at ? `.${err.at}` : ""}`, message: err.message });
    }
  }
  return { points, refused };
}

function decodeGroup(group: unknown): RowPoint[] {
  if (group === null || typeof group !== "object" || Array.isArray(group)) {
    throw new GroupFault("", "must be an object with keys, steps, wall_times and values");
  }
  const fields = group as Record<string, unknown>;
  for (const field of Object.keys(fields)) {
    if (!(GROUP_FIELDS as readonly string[]).includes(field)) {
      throw new GroupFault(field, "is not a field of a column group");
    }
  }
  const keys = checkKeys(fields.keys);
  const steps = numbers(fields.steps, "steps", "little-endian int64 steps", true);
  const rows = steps.length;
  const walls = numbers(fields.wall_times, "wall_times", "little-endian float64 times", false);
  if (walls.length !== rows) {
    throw new GroupFault(
      "wall_times",
      `must hold ${rows} times, one per step: it holds ${walls.length}`,
    );
  }
  for (const [i, step] of steps.entries()) {
    if (!Number.isSafeInteger(step) || step < 0) {
      throw new GroupFault(
        `steps.${i}`,
        `must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}: it is ${
          Number.isNaN(step) ? "far outside that" : step
        }`,
      );
    }
  }
  for (const [i, wall] of walls.entries()) {
    if (!Number.isFinite(wall) || wall < 0) {
      throw new GroupFault(`wall_times.${i}`, `must be a finite number >= 0: it is ${wall}`);
    }
  }
  const values = fields.values;
  if (!Array.isArray(values) || values.length !== keys.length) {
    throw new GroupFault(
      "values",
      `must be an array of ${keys.length} columns, one per key`,
    );
  }
  const columns = values.map((column, k) => {
    const decoded = numbers(column, `values.${k}`, "little-endian float64 values", false);
    if (decoded.length !== rows) {
      throw new GroupFault(
        `values.${k}`,
        `must hold ${rows} values, one per step: it holds ${decoded.length}`,
      );
    }
    return decoded;
  });
  const out: RowPoint[] = new Array(rows * keys.length);
  let n = 0;
  for (let i = 0; i < rows; i++) {
    for (let k = 0; k < keys.length; k++) {
      out[n++] = {
        key: keys[k],
        step: steps[i],
        value: encodeMetricValue(columns[k][i]),
        wall_time: walls[i],
      };
    }
  }
  return out;
}

function checkKeys(keys: unknown): string[] {
  if (!Array.isArray(keys) || keys.length === 0) {
    throw new GroupFault("keys", "must be a non-empty array of metric keys");
  }
  const seen = new Set<string>();
  for (const [k, key] of keys.entries()) {
    const parsed = metricKey.safeParse(key);
    if (!parsed.success) throw new GroupFault(`keys.${k}`, parsed.error.issues[0].message);
    if (seen.has(key)) throw new GroupFault(`keys.${k}`, `repeats the key ${JSON.stringify(key)}`);
    seen.add(key);
  }
  return keys as string[];
}

/** A column's numbers: int64 (read exactly while within ±2^53, else as NaN) or float64. */
function numbers(text: unknown, at: string, what: string, integers: boolean): number[] {
  if (typeof text !== "string" || !BASE64.test(text)) {
    throw new GroupFault(at, `must be a base64 string of ${what}`);
  }
  const bytes = Uint8Array.fromBase64(text);
  if (bytes.length === 0 || bytes.length % WIDTH !== 0) {
    throw new GroupFault(
      at,
      `must be a base64 string of ${what}: ${bytes.length} bytes is not a whole, non-zero ` +
        `number of ${WIDTH}-byte items`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Array<number>(bytes.length / WIDTH);
  for (let i = 0; i < out.length; i++) {
    if (integers) {
      const low = view.getUint32(i * WIDTH, true);
      const high = view.getInt32(i * WIDTH + 4, true);
      // Within ±2^53 the two halves give the number exactly; past it, no step can be.
      out[i] = Math.abs(high) < 0x200000 ? high * 0x100000000 + low : Number.NaN;
    } else {
      out[i] = view.getFloat64(i * WIDTH, true);
    }
  }
  return out;
}
