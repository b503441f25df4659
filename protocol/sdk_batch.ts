/**
 * An SDK log batch taken item by item: the valid part of a batch is kept and every refused
 * item is named, so one bad point or an over-long checkpoint path never costs the rest of a
 * batch (a training script cannot fix a batch after the fact; refusing it whole loses it).
 * The server's `POST /api/sdk/runs/{id}/log` and the agent's ingest endpoint both use it.
 * Points sent as `columns` (sdk_columns.ts) come out as rows in `points`, after those sent
 * as rows, so everything downstream sees one form.
 */
import type { z } from "zod";
import {
  checkpointIn,
  logLineIn,
  SDK_BATCH_LIMITS,
  sdkLogBatch,
  sdkMetricPoint,
} from "./rest/sdk.ts";
import { decodeColumns } from "./sdk_columns.ts";

/** One refused item: where it was in the batch and why. */
export interface RefusedItem {
  /** `points.3.key`, `checkpoints.0.path`, `status`, … */
  path: string;
  message: string;
}

/** What was refused, with at most MAX_NAMED_REFUSALS items named. */
export interface Refused {
  count: number;
  items: RefusedItem[];
}

/** How many refused items an answer names (the count covers all of them). */
export const MAX_NAMED_REFUSALS = 100;

/** The valid part of a batch: as sent (NaN still spelled "NaN") and as parsed. */
export interface PartitionedBatch {
  raw: Record<string, unknown>;
  batch: z.infer<typeof sdkLogBatch>;
  refused: Refused;
}

const LISTS = {
  points: sdkMetricPoint,
  checkpoints: checkpointIn,
  logs: logLineIn,
} as const;

/**
 * Splits a batch into its valid part and what was refused; null when `body` is not a JSON
 * object at all (the caller answers 400). Over-long lists keep their first items.
 */
export function partitionSdkBatch(body: unknown): PartitionedBatch | null {
  if (body === null || typeof body !== "object" || Array.isArray(body)) return null;
  const shape = sdkLogBatch.shape;
  const raw: Record<string, unknown> = {};
  const items: RefusedItem[] = [];
  let count = 0;
  const refuse = (path: string, message: string) => {
    count++;
    if (items.length < MAX_NAMED_REFUSALS) items.push({ path, message });
  };
  let columns: unknown = undefined;
  for (const [field, value] of Object.entries(body as Record<string, unknown>)) {
    if (field === "columns") {
      columns = value;
      continue;
    }
    if (!Object.hasOwn(shape, field)) {
      refuse(field, "is not a field of a log batch");
      continue;
    }
    if (field in LISTS) {
      const list = field as keyof typeof LISTS;
      if (!Array.isArray(value)) {
        refuse(field, "must be an array");
        continue;
      }
      const max = SDK_BATCH_LIMITS[list];
      const kept: unknown[] = [];
      for (const [i, item] of value.entries()) {
        if (kept.length >= max) {
          refuse(`${field}.${i}`, `is past the ${max} ${field} a batch may carry`);
          continue;
        }
        const parsed = LISTS[list].safeParse(item);
        if (parsed.success) kept.push(item);
        else refuse(issuePath(`${field}.${i}`, parsed.error), parsed.error.issues[0].message);
      }
      if (kept.length) raw[field] = kept;
      continue;
    }
    const parsed = shape[field as keyof typeof shape].safeParse(value);
    if (parsed.success) raw[field] = value;
    else refuse(issuePath(field, parsed.error), parsed.error.issues[0].message);
  }
  if (columns !== undefined) {
    const points = (raw.points ?? []) as unknown[];
    const decoded = decodeColumns(columns, SDK_BATCH_LIMITS.points - points.length);
    for (const { path, message } of decoded.refused) refuse(path, message);
    for (const point of decoded.points) points.push(point);
    if (points.length) raw.points = points;
  }
  // Every part was checked on its own above, so the whole parses.
  const batch = sdkLogBatch.parse(raw);
  return { raw, batch, refused: { count, items } };
}

function issuePath(prefix: string, error: z.ZodError): string {
  const rest = error.issues[0].path.map(String);
  return rest.length ? `${prefix}.${rest.join(".")}` : prefix;
}
