/**
 * Reading TensorBoard event files: TFRecord framing, Event decoding to scalars, and a
 * tailer that follows a job's log directory as it grows.
 *
 * @example Follow a directory
 * ```ts ignore
 * const tailer = new TensorBoardTailer("/runs/exp0", { state: saved });
 * const points = await tailer.poll(); // [{tag: "train/epoch_loss", step, value, wall_time}]
 * saved = tailer.state();
 * ```
 * @module
 */

export { crc32c, maskCrc32c } from "./crc32c.ts";
export { encodeRecord, readRecords, type RecordBatch } from "./record_reader.ts";
export { ProtobufError } from "./protobuf.ts";
export {
  createEventNotes,
  decodeScalars,
  type EventNotes,
  type ScalarPoint,
  sessionHparams,
  type SkippedKind,
} from "./event_decoder.ts";
export {
  DEFAULT_CHUNK_BYTES,
  EVENT_FILE_PREFIX,
  type EventFile,
  eventFileTimestamp,
  eventFileWriterPid,
  listEventFiles,
} from "./event_file.ts";
export {
  type SkippedReport,
  type TailerFileState,
  type TailerOptions,
  type TailerState,
  type TailerStats,
  TensorBoardTailer,
} from "./tailer.ts";
export {
  DEFAULT_LOG_ROOTS,
  discoverEventFiles,
  findLogRoots,
  isRunInstanceName,
  listKeyedEventFiles,
  metricPrefix,
  NOT_OUTPUT,
  strayEventFiles,
  writtenRootsWithoutEvents,
} from "./log_dirs.ts";
export { mergeScalars, readEventDir, readEventDirReport } from "./read_event_dir.ts";
