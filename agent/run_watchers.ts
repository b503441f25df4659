/**
 * What an attempt writes besides its output: TensorBoard scalars (its `tensorboard_dir`, or
 * `<working_dir>/runs`) and checkpoints (its `checkpoint_dir`), followed while it runs.
 */
import type { DispatchSpec } from "../protocol/agent.ts";
import {
  CheckpointWatcher,
  type CheckpointWatcherState,
  DEFAULT_DEBOUNCE_MS,
  type WatchedCheckpoint,
} from "./checkpoints/mod.ts";
import {
  listEventFiles,
  type ScalarPoint,
  type TailerState,
  TensorBoardTailer,
} from "./tensorboard/mod.ts";

/** The folder TensorBoard writers (PyTorch's `SummaryWriter`) use by default. */
export const DEFAULT_TENSORBOARD_DIR = "runs";

/** What one poll found. */
export interface WatchResult {
  points: ScalarPoint[];
  checkpoints: WatchedCheckpoint[];
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

/** The TensorBoard and checkpoint folders of an attempt (null: not watched). */
export function watchedDirs(
  spec: DispatchSpec,
): { tensorboard: string; checkpoints: string | null } {
  return {
    tensorboard: resolveIn(spec.working_dir, spec.tensorboard_dir ?? DEFAULT_TENSORBOARD_DIR),
    checkpoints: spec.checkpoint_dir ? resolveIn(spec.working_dir, spec.checkpoint_dir) : null,
  };
}

/** Follows one attempt's TensorBoard folder and checkpoint folder. */
export class RunWatchers {
  #tailer: TensorBoardTailer;
  #checkpoints: CheckpointWatcher | null;
  #clock: { boost: number };

  private constructor(
    tailer: TensorBoardTailer,
    checkpoints: CheckpointWatcher | null,
    clock: { boost: number },
  ) {
    this.#tailer = tailer;
    this.#checkpoints = checkpoints;
    this.#clock = clock;
  }

  /**
   * Watchers for an attempt. With `saved` (a reattach) they resume from it; without, files
   * already there before the attempt started (an earlier attempt's, in a reused folder) are
   * taken as seen, so they are not attributed to this run unless it writes them again.
   */
  static async create(spec: DispatchSpec, saved: WatcherStates | null): Promise<RunWatchers> {
    const dirs = watchedDirs(spec);
    const tensorboard = saved ? saved.tensorboard : await existingEventFiles(dirs.tensorboard);
    const tailer = new TensorBoardTailer(dirs.tensorboard, { state: tensorboard ?? undefined });
    // Moved forward once the job ended, when nothing changes any more.
    const clock = { boost: 0 };
    let watcher: CheckpointWatcher | null = null;
    if (dirs.checkpoints !== null) {
      const state = saved
        ? saved.checkpoints
        : await CheckpointWatcher.baselineState(dirs.checkpoints);
      watcher = new CheckpointWatcher(dirs.checkpoints, {
        state: state ?? undefined,
        now: () => Date.now() + clock.boost,
      });
    }
    return new RunWatchers(tailer, watcher, clock);
  }

  /** New scalars and settled checkpoints since the last poll. */
  async poll(): Promise<WatchResult> {
    const points = await this.#tailer.poll();
    const checkpoints = this.#checkpoints ? await this.#checkpoints.poll() : [];
    return { points, checkpoints };
  }

  /**
   * The last poll, after the job ended: checkpoints still settling are complete by now, so
   * the watcher's clock jumps past its debounce (a first scan notes any checkpoint not seen
   * before, the second reports it, as `incomplete` when its bytes are not complete).
   */
  async finalPoll(): Promise<WatchResult> {
    const first = await this.poll();
    if (!this.#checkpoints) return first;
    this.#clock.boost = DEFAULT_DEBOUNCE_MS * 10;
    const second = {
      points: await this.#tailer.poll(),
      checkpoints: await this.#checkpoints.poll({ final: true }),
    };
    return {
      points: [...first.points, ...second.points],
      checkpoints: [...first.checkpoints, ...second.checkpoints],
    };
  }

  state(): WatcherStates {
    return { tensorboard: this.#tailer.state(), checkpoints: this.#checkpoints?.state() ?? null };
  }
}

/** A tailer state that marks every event file now in `root` as read to its end. */
async function existingEventFiles(root: string): Promise<TailerState> {
  const state: TailerState = { version: 1, files: {} };
  for (const file of await listEventFiles(root)) {
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
