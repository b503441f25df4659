// Follows a job's checkpoint directory and reports each checkpoint its run writes, once it is
// complete; and each one that vanished.
//
// A checkpoint is a path *and* its content (`identity.ts`). What was in the folder when the
// attempt started is the baseline: another run's files (an earlier attempt's, or an earlier
// run of the same script in the same folder), not this run's until they change. A path whose
// identity changes (the baseline's or one already reported) was written again: a new
// checkpoint of this run, which the server then holds against the older record.
//
// "Complete" is read twice. First stability: a checkpoint is considered only after its size
// and modification time have stayed the same for `debounceMs` of the watcher's clock, across
// polls (times are compared between polls, never against the file's mtime, so the clock can
// be a fake one in tests and a file copied with its old mtime still waits). Then its bytes
// (`check_complete.ts`): a zip without its central directory, a safetensors file shorter than
// its header says, an HDF5 file its library has not closed, a Hugging Face folder without
// `trainer_state.json` are not checkpoints yet. While the job runs they wait; when it has
// ended (`final`), one still incomplete is reported as `incomplete`, with why, so that it is
// listed and never chosen.

import { basename } from "node:path";
import type { CheckpointIn } from "../../protocol/rest/sdk.ts";
import { checkFile, checkFolder, type Completeness } from "./check_complete.ts";
import { type FileIdentity, fingerprintOf, identityOf, sameIdentity } from "./identity.ts";
import { type FoundCheckpoint, scanCheckpoints, type ScanOptions } from "./scan_checkpoints.ts";

/** How long a checkpoint must stay unchanged before it is reported. */
export const DEFAULT_DEBOUNCE_MS = 2000;

/** What a watcher must remember across agent restarts so that nothing is reported twice. */
export interface CheckpointWatcherState {
  version: 2;
  /** Paths present when the attempt started, as they were then: not this run's checkpoints. */
  baseline: Record<string, FileIdentity>;
  /** Paths this run reported, as they were when reported. */
  reported: Record<string, FileIdentity>;
}

/** Options of `CheckpointWatcher`; every field is optional. */
export interface CheckpointWatcherOptions extends ScanOptions {
  /** Unchanged time required before a checkpoint is reported. @default 2000 */
  debounceMs?: number;
  /** The clock, Unix ms. @default Date.now */
  now?: () => number;
  /**
   * A previous watcher's `state()` (or `baselineState()` of the folder at the attempt's start):
   * what it holds is not reported again unless it changes. A version 1 state (`{registered:
   * [path]}`) is read too: its paths are taken as they are at the first poll.
   */
  state?: CheckpointWatcherState | { registered: string[] };
}

/** A checkpoint as reported: found, checked, fingerprinted; or gone. */
export interface WatchedCheckpoint extends FoundCheckpoint {
  /**
   * `valid`: complete (or of a format that cannot be checked); `incomplete`: still not
   * complete when the job ended (`problem` says why); `gone`: a file reported earlier, or
   * present at the attempt's start, no longer exists (size and mtime are the last seen).
   */
  state: "valid" | "incomplete" | "gone";
  problem: string | null;
  /** The content fingerprint (`identity.ts`); null for a gone one, and a link out of the folder (not read). */
  fingerprint: string | null;
}

interface Pending {
  identity: FileIdentity;
  /** When this identity was first seen. */
  since: number;
  /** The bytes' verdict for this identity, once read. */
  checked: Completeness | null;
}

/** Reports each checkpoint a run writes under a directory, once complete, and each one gone. */
export class CheckpointWatcher {
  readonly dir: string;
  readonly #debounceMs: number;
  readonly #now: () => number;
  readonly #scan: ScanOptions;
  readonly #baseline: Map<string, FileIdentity>;
  /** Null: a path from a version 1 state, taken as it is at the first poll. */
  readonly #reported: Map<string, FileIdentity | null>;
  readonly #pending = new Map<string, Pending>();

  constructor(dir: string, options: CheckpointWatcherOptions = {}) {
    this.dir = dir;
    this.#debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    this.#now = options.now ?? Date.now;
    this.#scan = { maxDepth: options.maxDepth, skip: options.skip, limit: options.limit };
    const state = options.state;
    if (state && "version" in state && state.version === 2) {
      this.#baseline = new Map(Object.entries(state.baseline ?? {}));
      this.#reported = new Map(Object.entries(state.reported ?? {}));
    } else {
      this.#baseline = new Map();
      const old = (state as { registered?: unknown } | undefined)?.registered;
      this.#reported = new Map(Array.isArray(old) ? old.map((p) => [String(p), null]) : []);
    }
  }

  /**
   * The state of a watcher for an attempt starting now: everything already under `dir` is its
   * baseline, as it is now.
   */
  static async baselineState(
    dir: string,
    options: ScanOptions = {},
  ): Promise<CheckpointWatcherState> {
    const baseline: Record<string, FileIdentity> = {};
    for (const c of await scanCheckpoints(dir, options)) baseline[c.path] = identityOf(c);
    return { version: 2, baseline, reported: {} };
  }

  /**
   * Scans once and returns, in `scanCheckpoints` order, the checkpoints written (or written
   * again) that have been stable for the debounce time and are complete, then those gone.
   * With `final` (the job has ended), a stable one that is still not complete is returned as
   * `incomplete`. A missing directory has none yet. Await one poll before starting the next.
   */
  async poll(options: { final?: boolean } = {}): Promise<WatchedCheckpoint[]> {
    const now = this.#now();
    const seen = new Set<string>();
    const ready: WatchedCheckpoint[] = [];
    for (const checkpoint of await scanCheckpoints(this.dir, this.#scan)) {
      const { path } = checkpoint;
      seen.add(path);
      const identity = identityOf(checkpoint);
      const known = this.#reported.has(path) ? this.#reported.get(path) : this.#baseline.get(path);
      if (known === null) {
        this.#reported.set(path, identity); // a version 1 path: as it is now
        continue;
      }
      if (known && sameIdentity(known, identity)) {
        this.#pending.delete(path);
        continue;
      }
      const pending = this.#pending.get(path);
      if (!pending || !sameIdentity(pending.identity, identity)) {
        this.#pending.set(path, { identity, since: now, checked: null });
        continue;
      }
      if (now - pending.since < this.#debounceMs) continue;
      pending.checked ??= await check(checkpoint, this.dir);
      const checked = pending.checked;
      if (checked === null) continue; // vanished while read: the next scan says
      if (checked.problem !== null && !options.final) continue;
      const read = await fingerprintOf(checkpoint, this.dir);
      if (read === null) continue;
      const { fingerprint } = read;
      this.#pending.delete(path);
      this.#baseline.delete(path);
      this.#reported.set(path, identity);
      ready.push(withVerdict(checkpoint, checked, fingerprint));
    }
    // Forget what vanished before it settled (a temp file renamed away, a rotated folder).
    for (const path of this.#pending.keys()) {
      if (!seen.has(path)) this.#pending.delete(path);
    }
    // A file reported, or there at the start, that is no longer: whichever run's record holds
    // it is told (Lightning's `save_top_k` deletes the checkpoints it no longer keeps). Not
    // after a scan cut short by its entry limit: what it did not reach is not gone.
    if (this.#scan.limit?.truncated) return ready;
    for (const known of [this.#reported, this.#baseline]) {
      for (const [path, identity] of known) {
        if (seen.has(path)) continue;
        known.delete(path);
        if (identity === null) continue;
        ready.push(goneCheckpoint(path, identity));
      }
    }
    return ready;
  }

  /** What to pass back as `state` after a restart. */
  state(): CheckpointWatcherState {
    const reported: Record<string, FileIdentity> = {};
    for (const [path, identity] of this.#reported) if (identity) reported[path] = identity;
    return { version: 2, baseline: Object.fromEntries(this.#baseline), reported };
  }

  /** How many checkpoints are seen but not yet reported. */
  get pendingCount(): number {
    return this.#pending.size;
  }
}

/**
 * A found checkpoint checked and fingerprinted, as the watcher reports one at a job's end
 * (`gpuctl import-run` reads a finished folder this way); null when it vanished meanwhile.
 */
export async function inspectCheckpoint(
  c: FoundCheckpoint,
  root: string,
): Promise<WatchedCheckpoint | null> {
  const checked = await check(c, root);
  const read = checked ? await fingerprintOf(c, root) : null;
  return checked && read ? withVerdict(c, checked, read.fingerprint) : null;
}

function withVerdict(
  c: FoundCheckpoint,
  checked: Completeness,
  fingerprint: string | null,
): WatchedCheckpoint {
  return {
    ...c,
    step: c.step ?? checked.step,
    epoch: c.epoch ?? checked.epoch,
    state: checked.problem === null ? "valid" : "incomplete",
    problem: checked.problem,
    fingerprint,
  };
}

function check(c: FoundCheckpoint, root: string): Promise<Completeness | null> {
  switch (c.kind) {
    case "file":
      return checkFile(c.path, basename(c.path), root);
    case "folder":
    case "hf_folder":
      return checkFolder(c.path, c.kind === "hf_folder", root);
    case "tf":
      // TensorFlow writes the index last, after its shards: the scanner's rule already.
      return Promise.resolve({ format: "tensorflow", problem: null, step: null, epoch: null });
  }
}

function goneCheckpoint(path: string, identity: FileIdentity): WatchedCheckpoint {
  return {
    path,
    kind: "file",
    ino: identity.ino,
    step: null,
    epoch: null,
    size_bytes: identity.size,
    mtime_ms: identity.mtime_ms,
    state: "gone",
    problem: null,
    fingerprint: null,
  };
}

/** The `checkpoint` a data frame (or an import's batch) carries for a checkpoint. */
export function checkpointWire(
  c: FoundCheckpoint & Partial<Pick<WatchedCheckpoint, "state" | "problem" | "fingerprint">>,
): CheckpointIn {
  const wire: CheckpointIn = { path: c.path, size_bytes: c.size_bytes, mtime: c.mtime_ms / 1000 };
  if (c.step !== null) wire.step = c.step;
  if (c.epoch !== null) wire.epoch = c.epoch;
  if (c.state && c.state !== "valid") wire.state = c.state;
  if (c.problem) wire.problem = c.problem.slice(0, 1000);
  if (c.fingerprint) wire.fingerprint = c.fingerprint;
  return wire;
}
