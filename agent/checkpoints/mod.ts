/**
 * Checkpoint discovery: which files and folders under a directory are checkpoints, with the
 * step and epoch their names carry. The agent's watcher reports each one once it stopped
 * changing; `gpuctl import-run` scans an old experiment folder with the same rules.
 *
 * Recognised: `*.pt *.pth *.ckpt *.safetensors *.bin *.pkl` files; Hugging Face
 * `checkpoint-<step>/` folders (one checkpoint each); TensorFlow `<name>.ckpt-<n>.index` with
 * its `.data-*-of-*` shards (one checkpoint, path without suffix). Temporary names (`.x`,
 * `*.tmp`, `*.part`, `tmp-*`) are skipped.
 *
 * @example Follow a directory
 * ```ts ignore
 * const watcher = new CheckpointWatcher("/runs/exp0/ckpt", { state: saved });
 * for (const c of await watcher.poll()) send(c); // {path, step, epoch, size_bytes, mtime_ms}
 * saved = watcher.state();
 * ```
 * @module
 */

export {
  CHECKPOINT_EXTENSIONS,
  type CheckpointName,
  isTemporaryName,
  parseCheckpointName,
} from "./parse_checkpoint_name.ts";
export {
  compareCheckpoints,
  DEFAULT_SCAN_DEPTH,
  type FoundCheckpoint,
  scanCheckpoints,
  type ScanOptions,
} from "./scan_checkpoints.ts";
export {
  CheckpointWatcher,
  type CheckpointWatcherOptions,
  type CheckpointWatcherState,
  DEFAULT_DEBOUNCE_MS,
} from "./checkpoint_watcher.ts";
