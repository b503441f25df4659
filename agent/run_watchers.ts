/**
 * What an attempt writes besides its output: TensorBoard scalars (its `tensorboard_dir`, or
 * the folders frameworks write to by default under its working dir) and checkpoints (its
 * `checkpoint_dir`), followed while it runs.
 */
import type { DispatchSpec } from "../protocol/agent.ts";
import { MAX_NAME_LENGTH } from "../protocol/rest/fields.ts";
import { isLocalDevice } from "./local_fs.ts";
import {
  CheckpointWatcher,
  type CheckpointWatcherState,
  DEFAULT_DEBOUNCE_MS,
  type WatchedCheckpoint,
} from "./checkpoints/mod.ts";
import {
  DEFAULT_LOG_ROOTS,
  discoverEventFiles,
  type EventFile,
  eventFileWriterPid,
  listKeyedEventFiles,
  NOT_OUTPUT,
  type ScalarPoint,
  strayEventFiles,
  type TailerState,
  TensorBoardTailer,
  writtenRootsWithoutEvents,
} from "./tensorboard/mod.ts";

/** How far before the attempt's start a file time still counts as written during it. */
const MTIME_SLACK_MS = 1000;

/** An `epoch` scalar above this is not an epoch count (and would not fit the wire's integer). */
const MAX_EPOCH = 1e9;

/** TensorBoard hparams, as the run's config. */
export type Hparams = Record<string, string | number | boolean | null>;

/** What one poll found. */
export interface WatchResult {
  points: ScalarPoint[];
  checkpoints: WatchedCheckpoint[];
  /** The hparams read so far, when they changed in this poll (they become the run's config). */
  config: Hparams | null;
  /** The epoch of an `epoch` scalar (Lightning `epoch`, Transformers `train/epoch`) when it rose. */
  epoch: number | null;
}

/** Saved progress, for the agent's state file. */
export interface WatcherStates {
  tensorboard: TailerState | null;
  checkpoints: CheckpointWatcherState | null;
}

/** `dir` inside `workingDir` unless absolute. */
export function resolveIn(workingDir: string, dir: string): string {
  return dir.startsWith("/") ? dir : `${workingDir.replace(/\/+$/, "")}/${dir}`;
}

/** Where an attempt's event files are looked for. */
export interface TensorBoardSource {
  /** The folder the tailer walks: the `tensorboard_dir`, else the working dir. */
  root: string;
  /** True when the job named its folder (`tensorboard_dir`). */
  explicit: boolean;
  /** Finds the event files under `root`, each with its key prefix (see `TailerOptions.list`). */
  list(root: string, folders?: string[]): Promise<EventFile[]>;
  /** Folders that are never a job's logs (the agent's own runs folder). */
  ignore: readonly string[];
}

/** The TensorBoard source and checkpoint folder of an attempt. */
export function watchedDirs(
  spec: DispatchSpec,
  ignore: readonly string[] = [],
): { tensorboard: TensorBoardSource; checkpoints: CheckpointSource } {
  const tensorboard: TensorBoardSource = spec.tensorboard_dir
    ? {
      root: resolveIn(spec.working_dir, spec.tensorboard_dir),
      explicit: true,
      list: listKeyedEventFiles,
      ignore,
    }
    : {
      root: spec.working_dir,
      explicit: false,
      list: (root, folders) => discoverEventFiles(root, ignore, folders),
      ignore,
    };
  return {
    tensorboard,
    checkpoints: spec.checkpoint_dir
      ? { dir: resolveIn(spec.working_dir, spec.checkpoint_dir), explicit: true }
      : { dir: spec.working_dir, explicit: false },
  };
}

/** Where an attempt's checkpoints are looked for. */
export interface CheckpointSource {
  /** The job's `checkpoint_dir`, else its working dir. */
  dir: string;
  /** True when the job named its folder (`checkpoint_dir`). */
  explicit: boolean;
}

/**
 * Without a `checkpoint_dir` the working dir is searched (zero change: Lightning's
 * `lightning_logs/version_N/checkpoints/`, the Trainer's `<output_dir>/checkpoint-N/`, a
 * script's `torch.save` next to it), four levels deep, skipping code, environments, caches
 * and the agent's own folders, listing at most this many entries a scan.
 */
export const DISCOVERY_MAX_ENTRIES = 5000;
/** And scanned this often while the job runs (a named folder: every poll). */
export const DISCOVERY_SCAN_MS = 5000;

/**
 * How often a job's event folders are looked at for files added besides those it writes
 * already (a stat of each folder, the larger part of a poll's cost): the files it writes are
 * read at every poll, its first file is looked for at every poll, and a later one (a new
 * run's folder in a sweep script, say) is found within this.
 */
export const EVENT_FOLDER_CHECK_MS = 3000;

/** Options of `RunWatchers.create`; every field is optional. */
export interface RunWatchersOptions {
  /** Folders that are never a job's logs (the agent's own runs folder). @default none */
  ignore?: readonly string[];
  /**
   * True when `pid` is a live process of another attempt on this agent: an event file it
   * writes is not this attempt's. @default every writer is this attempt's
   */
  otherAttemptPid?: (pid: number) => boolean;
}

/** Follows one attempt's event files and checkpoint folder. */
export class RunWatchers {
  #tailer: TensorBoardTailer;
  #source: TensorBoardSource;
  #checkpoints: CheckpointWatcher;
  #clock: { boost: number };
  /** Unix ms when the watchers were made for a new attempt; null after a reattach. */
  #since: number | null;
  /** How often the checkpoint folder is scanned while the job runs (0: every poll). */
  #checkpointScanMs: number;
  #lastCheckpointScan = -Infinity;
  #sentConfig = "";
  #sentEpoch = -1;

  private constructor(
    tailer: TensorBoardTailer,
    source: TensorBoardSource,
    checkpoints: CheckpointWatcher,
    clock: { boost: number },
    since: number | null,
    checkpointScanMs: number,
  ) {
    this.#checkpointScanMs = checkpointScanMs;
    this.#tailer = tailer;
    this.#source = source;
    this.#checkpoints = checkpoints;
    this.#clock = clock;
    this.#since = since;
  }

  /**
   * Watchers for an attempt. With `saved` (a reattach) they resume from it; without, event
   * files already there are taken as read to their current end and checkpoints already there
   * as seen, so an earlier run's files in a reused folder are not attributed to this one: only
   * files created after this moment, bytes appended to older event files, and checkpoints
   * written again are this attempt's.
   */
  static async create(
    spec: DispatchSpec,
    saved: WatcherStates | null,
    options: RunWatchersOptions = {},
  ): Promise<RunWatchers> {
    const dirs = watchedDirs(spec, options.ignore);
    const since = Date.now();
    const tensorboard = saved ? saved.tensorboard : await existingEventFiles(dirs.tensorboard);
    const otherAttempt = options.otherAttemptPid;
    const tailer = new TensorBoardTailer(dirs.tensorboard.root, {
      state: tensorboard ?? undefined,
      list: dirs.tensorboard.list,
      localDevice: isLocalDevice,
      folderCheckMs: EVENT_FOLDER_CHECK_MS,
      // Two attempts may share a working dir (a sweep's trials): a new file whose writer is
      // a live process of another attempt is that attempt's, not this one's.
      accept: otherAttempt
        ? (file) => {
          const pid = eventFileWriterPid(file.path.slice(file.path.lastIndexOf("/") + 1));
          return pid === null || !otherAttempt(pid);
        }
        : undefined,
    });
    // Moved forward once the job ended, when nothing changes any more.
    const clock = { boost: 0 };
    const scan = dirs.checkpoints.explicit ? {} : {
      skip: { paths: options.ignore ?? [], names: NOT_OUTPUT },
      limit: { entries: DISCOVERY_MAX_ENTRIES },
    };
    // A reattach resumes the saved watcher; one that saved none (an agent from before the
    // working dir was searched) takes what is there now as the baseline, like a new attempt.
    const state = saved?.checkpoints ??
      await CheckpointWatcher.baselineState(dirs.checkpoints.dir, scan);
    const watcher = new CheckpointWatcher(dirs.checkpoints.dir, {
      ...scan,
      state,
      now: () => Date.now() + clock.boost,
    });
    return new RunWatchers(
      tailer,
      dirs.tensorboard,
      watcher,
      clock,
      saved ? null : since,
      dirs.checkpoints.explicit ? 0 : DISCOVERY_SCAN_MS,
    );
  }

  /** New scalars, hparams and epoch, and settled checkpoints since the last poll. */
  async poll(): Promise<WatchResult> {
    const points = await this.#tailer.poll();
    let checkpoints: WatchedCheckpoint[] = [];
    const now = Date.now();
    if (now - this.#lastCheckpointScan >= this.#checkpointScanMs) {
      this.#lastCheckpointScan = now;
      checkpoints = await this.#checkpoints.poll();
    }
    return { points, checkpoints, config: this.#newConfig(), epoch: this.#newEpoch(points) };
  }

  /**
   * The last poll, after the job ended: checkpoints still settling are complete by now, so
   * the watcher's clock jumps past its debounce (a first scan notes any checkpoint not seen
   * before, the second reports it, as `incomplete` when its bytes are not complete).
   */
  async finalPoll(): Promise<WatchResult> {
    this.#lastCheckpointScan = -Infinity; // both scans now, whatever the scan interval
    this.#tailer.lookAtFoldersNext(); // and every event folder, whatever its check interval
    const first = await this.poll();
    this.#clock.boost = DEFAULT_DEBOUNCE_MS * 10;
    const points = await this.#tailer.poll();
    const second = {
      points,
      checkpoints: await this.#checkpoints.poll({ final: true }),
      config: this.#newConfig(),
      epoch: this.#newEpoch(points),
    };
    return {
      points: [...first.points, ...second.points],
      checkpoints: [...first.checkpoints, ...second.checkpoints],
      config: second.config ?? first.config,
      epoch: second.epoch ?? first.epoch,
    };
  }

  /** Closes the files kept open between polls (the attempt ended, or the agent detached). */
  async close(): Promise<void> {
    await this.#tailer.close();
  }

  state(): WatcherStates {
    return { tensorboard: this.#tailer.state(), checkpoints: this.#checkpoints.state() };
  }

  /**
   * After the job ended: why the run got no TensorBoard scalars, when event files were
   * expected (a `tensorboard_dir` was given, event files were written where gpuctl does not
   * look, or a framework's log folder was written without any); null when it read some, or
   * nothing suggests the script meant to write any.
   */
  async missingEventFilesNote(): Promise<string | null> {
    if (this.#tailer.stats().records > 0) return null;
    const source = this.#source;
    if (source.explicit) {
      return `No TensorBoard event files were written under ${source.root} during this run ` +
        "(its tensorboard_dir): check where the script writes them.";
    }
    if (this.#since === null) return null;
    // File times come from the kernel's coarse clock, a few ms behind Date.now().
    const since = this.#since - MTIME_SLACK_MS;
    const stray = await strayEventFiles(source.root, since, source.ignore);
    if (stray.length > 0) {
      const listed = stray.slice(0, 3).join(", ") + (stray.length > 3 ? ", …" : "");
      return `TensorBoard event files written during this run are outside the folders gpuctl ` +
        `follows (${roots()} in the working dir or one folder down), so the run has none of ` +
        `their scalars: ${listed}. Submit with --tb-dir ${
          stray[0]
        } (tensorboard_dir) to follow them.`;
    }
    const empty = await writtenRootsWithoutEvents(source.root, since, source.ignore);
    if (empty.length > 0) {
      return `${empty[0]} was written during this run but holds no TensorBoard event files ` +
        "(is the tensorboard package installed where the job runs?), so the run has no " +
        "scalars from it.";
    }
    return null;
  }

  #newConfig(): Hparams | null {
    const read = this.#tailer.skippedReport().hparams;
    if (read === null) return null;
    // A config key the server would refuse would make the whole frame unstorable.
    const hparams = Object.fromEntries(
      Object.entries(read).filter(([name]) => name.length <= MAX_NAME_LENGTH),
    );
    const json = JSON.stringify(hparams);
    if (json === this.#sentConfig) return null;
    this.#sentConfig = json;
    return hparams;
  }

  #newEpoch(points: ScalarPoint[]): number | null {
    let epoch = -1;
    for (const point of points) {
      if (point.tag !== "epoch" && !point.tag.endsWith("/epoch")) continue;
      if (Number.isFinite(point.value) && point.value >= 0 && point.value <= MAX_EPOCH) {
        epoch = Math.max(epoch, Math.floor(point.value));
      }
    }
    if (epoch <= this.#sentEpoch) return null;
    this.#sentEpoch = epoch;
    return epoch;
  }
}

function roots(): string {
  return DEFAULT_LOG_ROOTS.map((name) => `${name}/`).join(", ");
}

/** A tailer state that marks every event file now in the source as read to its end. */
async function existingEventFiles(source: TensorBoardSource): Promise<TailerState> {
  const state: TailerState = { version: 1, files: {} };
  for (const file of await source.list(source.root)) {
    try {
      const info = await Deno.stat(file.path);
      state.files[file.relPath] = {
        offset: info.size,
        scalarTags: [],
        ino: info.ino,
        framingLost: false,
      };
    } catch {
      // Gone meanwhile: nothing to skip.
    }
  }
  return state;
}
