/**
 * Checkpoint discovery: which files and folders under a directory are checkpoints, with the
 * step and epoch their names carry. The agent's watcher reports each one its run writes (or
 * writes again) once it stopped changing and its bytes are complete, and each one that
 * vanished; `gpuctl import-run` scans an old experiment folder with the same rules.
 *
 * Recognised: `*.pt *.pth *.ckpt *.safetensors *.bin *.pkl *.keras *.h5 *.weights.h5 *.hdf5`
 * files; Hugging Face `checkpoint-<step>/` folders (one checkpoint each); TensorFlow
 * `<name>.ckpt-<n>.index` with its `.data-*-of-*` shards (one checkpoint, path without
 * suffix). Temporary names (`.x`, `*.tmp`, `*.part`, `tmp-*`) are skipped. Complete: see
 * `check_complete.ts`; identity and fingerprint: `identity.ts`.
 *
 * @example Follow a directory
 * ```ts ignore
 * const watcher = new CheckpointWatcher("/runs/exp0/ckpt", { state: saved });
 * for (const c of await watcher.poll()) send(checkpointWire(c)); // {path, step, state, …}
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
  checkpointWire,
  DEFAULT_DEBOUNCE_MS,
  inspectCheckpoint,
  type WatchedCheckpoint,
} from "./checkpoint_watcher.ts";
export { checkBytes, checkFile, checkFolder, type Completeness } from "./check_complete.ts";
export { type FileIdentity, fingerprintOf } from "./identity.ts";
