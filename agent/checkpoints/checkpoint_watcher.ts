// Follows a job's checkpoint directory and reports each checkpoint once, when it is complete.
//
// "Complete" cannot be read from a file: a `torch.save` in progress looks like a smaller
// checkpoint. So a checkpoint is reported only after its size and modification time have
// stayed the same for `debounceMs` of the watcher's clock, across polls. Times are compared
// between polls, never against the file's mtime, so the clock can be a fake one in tests and a
// file copied with its old mtime preserved (`cp -p`, rsync) still waits.

import { type FoundCheckpoint, scanCheckpoints, type ScanOptions } from "./scan_checkpoints.ts";

/** How long a checkpoint must stay unchanged before it is reported. */
export const DEFAULT_DEBOUNCE_MS = 2000;

/** What a watcher must remember across agent restarts so that nothing is reported twice. */
export interface CheckpointWatcherState {
  /** Paths already reported, in the order they were. */
  registered: string[];
}

/** Options of `CheckpointWatcher`; every field is optional. */
export interface CheckpointWatcherOptions extends ScanOptions {
  /** Unchanged time required before a checkpoint is reported. @default 2000 */
  debounceMs?: number;
  /** The clock, Unix ms. @default Date.now */
  now?: () => number;
  /** A previous watcher's `state()`: its checkpoints are not reported again. */
  state?: CheckpointWatcherState;
}

interface Pending {
  size: number;
  mtimeMs: number;
  /** When this size and mtime were first seen. */
  since: number;
}

/** Reports each checkpoint under a directory once, after it stopped changing. */
export class CheckpointWatcher {
  readonly dir: string;
  readonly #debounceMs: number;
  readonly #now: () => number;
  readonly #scan: ScanOptions;
  readonly #registered: Set<string>;
  readonly #pending = new Map<string, Pending>();

  constructor(dir: string, options: CheckpointWatcherOptions = {}) {
    this.dir = dir;
    this.#debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
    this.#now = options.now ?? Date.now;
    this.#scan = { maxDepth: options.maxDepth };
    this.#registered = new Set(options.state?.registered ?? []);
  }

  /**
   * Scans once and returns the checkpoints that are new and have been stable for the debounce
   * time, in `scanCheckpoints` order. A later change to a reported path is not reported again
   * (the server keeps one checkpoint per path). A missing directory has none yet. Await one
   * poll before starting the next.
   */
  async poll(): Promise<FoundCheckpoint[]> {
    const now = this.#now();
    const seen = new Set<string>();
    const ready: FoundCheckpoint[] = [];
    for (const checkpoint of await scanCheckpoints(this.dir, this.#scan)) {
      const { path, size_bytes: size, mtime_ms: mtimeMs } = checkpoint;
      if (this.#registered.has(path)) continue;
      seen.add(path);
      const pending = this.#pending.get(path);
      if (!pending || pending.size !== size || pending.mtimeMs !== mtimeMs) {
        this.#pending.set(path, { size, mtimeMs, since: now });
        continue;
      }
      if (now - pending.since >= this.#debounceMs) {
        this.#pending.delete(path);
        this.#registered.add(path);
        ready.push(checkpoint);
      }
    }
    // Forget what vanished before it settled (a temp file renamed away, a rotated folder).
    for (const path of this.#pending.keys()) {
      if (!seen.has(path)) this.#pending.delete(path);
    }
    return ready;
  }

  /** What to pass back as `state` after a restart. */
  state(): CheckpointWatcherState {
    return { registered: [...this.#registered] };
  }

  /** How many checkpoints are seen but not yet stable. */
  get pendingCount(): number {
    return this.#pending.size;
  }
}
