// Turning an old experiment folder into an IMPORTED run: every TensorBoard scalar under it
// (subfolders become tag prefixes, the newer event file wins), the hparams plugin's session
// as the run's config, and every checkpoint, sent in batches; what is not a scalar is counted
// by kind and reported. The run is found again by the folder's real path, and the server
// keeps one point per (key, step) and one checkpoint per path, so importing a folder twice
// changes nothing (the summary says how many points and checkpoints were new).

import { basename } from "node:path";
import {
  checkpointWire,
  type FoundCheckpoint,
  inspectCheckpoint,
  scanCheckpoints,
  type WatchedCheckpoint,
} from "../agent/checkpoints/mod.ts";
import { readEventDirReport, type SkippedReport } from "../agent/tensorboard/mod.ts";
import { encodeMetricValue } from "../protocol/objects.ts";
import type {
  Accepted,
  ImportRequest,
  ImportResponse,
  LogBatch,
  WireCheckpoint,
  WirePoint,
} from "./client.ts";

/** Points per log batch (well below the server's 10 MB body limit). */
export const POINTS_PER_BATCH = 5000;
/** Checkpoints per log batch (the server accepts at most 1000). */
export const CHECKPOINTS_PER_BATCH = 1000;
/** The longest import key the server accepts. */
export const MAX_IMPORT_KEY_LENGTH = 200;
/** The longest metric key or run name the server accepts; longer tags are left out. */
const MAX_NAME_LENGTH = 200;

/** The calls an import makes; `GpuctlClient` is one, tests may bring another. */
export interface ImportClient {
  createImport(body: ImportRequest): Promise<ImportResponse>;
  logBatch(runId: string, body: LogBatch): Promise<Accepted>;
  /** How many metric points the run holds; without it a re-import cannot count new points. */
  countPoints?(runId: string): Promise<number>;
}

/** What an import leaves out, by kind (only kinds that occurred). */
export type LeftOut = Partial<Record<string, number>>;

/** What was read from a folder, ready to send. */
export interface ImportSource {
  /** The folder's real path (symbolic links resolved). */
  dir: string;
  importKey: string;
  points: WirePoint[];
  keys: string[];
  /** Checked (`state`, `problem`) and fingerprinted where read from disk. */
  checkpoints: (FoundCheckpoint & Partial<WatchedCheckpoint>)[];
  /** Scalars the server would refuse (negative step, key over 200 characters). */
  skipped: number;
  /** What the event files held besides scalars, and their incomplete or corrupt records. */
  left_out: LeftOut;
  /** The TensorBoard hparams plugin's session values: the run's config. */
  config: Record<string, string | number | boolean | null>;
}

/** What an import did. */
export interface ImportSummary {
  run_id: string;
  /** False when the folder had been imported before (its run was reused). */
  created: boolean;
  dir: string;
  import_key: string;
  project: string;
  experiment: string | null;
  name: string;
  points: number;
  keys: string[];
  checkpoints: number;
  /** Checkpoints the server did not have yet. */
  new_checkpoints: number;
  /** Points the run did not hold before (null when they could not be counted). */
  new_points: number | null;
  skipped_points: number;
  /** Non-scalar records by kind, truncated tails and corrupt records, left out. */
  left_out: LeftOut;
  /** Config keys taken from the hparams plugin. */
  config_keys: string[];
  batches: number;
}

/** The left-out counts of an import, named as the summary shows them. */
export function leftOutOf(report: SkippedReport): LeftOut {
  const out: LeftOut = { ...report.skipped };
  if (report.truncated_tails) out.truncated_tails = report.truncated_tails;
  if (report.corrupt) out.corrupt_records = report.corrupt;
  return out;
}

/**
 * The import key of a folder: `dir:` and its real path, so the same folder reached through
 * a symbolic link or a relative path is the same import. Paths too long for the server's
 * 200 characters keep their end and a hash of the whole.
 */
export async function importKeyOf(realDir: string): Promise<string> {
  const key = `dir:${realDir}`;
  if (key.length <= MAX_IMPORT_KEY_LENGTH) return key;
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(realDir)),
  );
  const hex = [...digest.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const tail = realDir.slice(-(MAX_IMPORT_KEY_LENGTH - "dir:sha256::…".length - hex.length));
  return `dir:sha256:${hex}:…${tail}`;
}

/** Reads every scalar and checkpoint under `dir`; an error when it is not a folder. */
export async function readImportSource(dir: string): Promise<ImportSource> {
  let realDir: string;
  try {
    realDir = await Deno.realPath(dir);
  } catch (err) {
    throw new Error(`Cannot import "${dir}": ${(err as Error).message}`, { cause: err });
  }
  const info = await Deno.stat(realDir);
  if (!info.isDirectory) throw new Error(`Cannot import "${dir}": it is not a folder`);
  const { points: scalars, report } = await readEventDirReport(realDir);
  const points: WirePoint[] = [];
  let skipped = 0;
  for (const s of scalars) {
    if (!Number.isSafeInteger(s.step) || s.step < 0 || s.tag.length > MAX_NAME_LENGTH) {
      skipped++;
      continue;
    }
    const point: WirePoint = {
      key: s.tag,
      step: s.step,
      value: encodeMetricValue(s.value) as WirePoint["value"],
    };
    if (Number.isFinite(s.wall_time) && s.wall_time >= 0) point.wall_time = s.wall_time;
    points.push(point);
  }
  return {
    dir: realDir,
    importKey: await importKeyOf(realDir),
    points,
    keys: [...new Set(points.map((p) => p.key))].sort(),
    checkpoints: await inspected(await scanCheckpoints(realDir), realDir),
    skipped,
    left_out: leftOutOf(report),
    config: report.hparams ?? {},
  };
}

/**
 * The log batches of an import, in sending order: the config (hparams) first, every point,
 * then the checkpoints, so the server finds the metrics at each checkpoint's step among the
 * points already stored. The config goes in a batch (not the registration) so a re-import
 * of a folder whose hparams were added later updates it too.
 */
export function importBatches(source: ImportSource): LogBatch[] {
  const batches: LogBatch[] = [];
  if (Object.keys(source.config).length) batches.push({ config: source.config });
  for (let i = 0; i < source.points.length; i += POINTS_PER_BATCH) {
    batches.push({ points: source.points.slice(i, i + POINTS_PER_BATCH) });
  }
  const checkpoints = source.checkpoints.map(wireCheckpoint);
  const epochs = source.checkpoints.map((c) => c.epoch).filter((e) => e !== null);
  for (let i = 0; i < checkpoints.length; i += CHECKPOINTS_PER_BATCH) {
    const batch: LogBatch = { checkpoints: checkpoints.slice(i, i + CHECKPOINTS_PER_BATCH) };
    if (epochs.length && i + CHECKPOINTS_PER_BATCH >= checkpoints.length) {
      batch.epoch = Math.max(...epochs);
    }
    batches.push(batch);
  }
  return batches;
}

function wireCheckpoint(c: ImportSource["checkpoints"][number]): WireCheckpoint {
  return checkpointWire(c);
}

// Each checkpoint checked as the agent checks one at a job's end: a file cut short is sent as
// `incomplete`, so it is listed and never recommended; one that vanished meanwhile is left out.
async function inspected(found: FoundCheckpoint[], root: string): Promise<WatchedCheckpoint[]> {
  const out: WatchedCheckpoint[] = [];
  for (const c of found) {
    const i = await inspectCheckpoint(c, root);
    if (i) out.push(i);
  }
  return out;
}

/** Options of `importFolder`. */
export interface ImportOptions {
  project: string;
  experiment?: string;
  /** @default the folder's name */
  name?: string;
}

/** Creates (or finds) the folder's run and sends everything read from it. */
export async function importFolder(
  client: ImportClient,
  source: ImportSource,
  options: ImportOptions,
): Promise<ImportSummary> {
  if (
    source.points.length === 0 && source.checkpoints.length === 0 &&
    Object.keys(source.config).length === 0
  ) {
    throw new Error(
      `Nothing to import from "${source.dir}": no TensorBoard scalars and no checkpoints ` +
        "under it (searched event files and checkpoint names 4 folders deep)",
    );
  }
  const name = options.name ?? (basename(source.dir) || source.dir).slice(0, MAX_NAME_LENGTH);
  const request: ImportRequest = {
    import_key: source.importKey,
    project: options.project,
    name,
  };
  if (options.experiment !== undefined) request.experiment = options.experiment;
  const { run, created } = await client.createImport(request);
  const before = created ? 0 : await client.countPoints?.(run.id);
  const batches = importBatches(source);
  let newCheckpoints = 0;
  for (const [i, batch] of batches.entries()) {
    try {
      newCheckpoints += (await client.logBatch(run.id, batch)).checkpoints;
    } catch (err) {
      throw new Error(
        `Cannot finish importing "${source.dir}" into run ${run.id}: batch ${i + 1} of ` +
          `${batches.length} failed: ${(err as Error).message}; run the import again to resume`,
        { cause: err },
      );
    }
  }
  const after = before === undefined ? undefined : await client.countPoints?.(run.id);
  return {
    run_id: run.id,
    created,
    dir: source.dir,
    import_key: source.importKey,
    project: options.project,
    experiment: options.experiment ?? null,
    name,
    points: source.points.length,
    keys: source.keys,
    checkpoints: source.checkpoints.length,
    new_checkpoints: newCheckpoints,
    new_points: created
      ? source.points.length
      : before === undefined || after === undefined
      ? null
      : after - before,
    skipped_points: source.skipped,
    left_out: source.left_out,
    config_keys: Object.keys(source.config).sort(),
    batches: batches.length,
  };
}
