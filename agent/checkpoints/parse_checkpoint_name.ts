// What a file or folder name says about a checkpoint: whether it is one, a part of one, or
// neither, and the step and epoch it carries. Pure; the scanner brings the file system.

/** The step and epoch read from a checkpoint's name; null where the name does not say. */
export interface CheckpointName {
  step: number | null;
  epoch: number | null;
}

/**
 * File extensions of single-file checkpoints (PyTorch, Lightning, safetensors, pickles, Keras);
 * the longer of two that end alike first, so `m.weights.h5`'s stem is `m`.
 */
export const CHECKPOINT_EXTENSIONS = [
  ".pt",
  ".pth",
  ".ckpt",
  ".safetensors",
  ".bin",
  ".pkl",
  ".keras",
  ".weights.h5",
  ".h5",
  ".hdf5",
];
// Keras's ModelCheckpoint names files by a pattern like `model-{epoch:02d}.keras` or
// `weights.{epoch:02d}-{val_loss:.2f}.hdf5`: a bare number there is the epoch (counted from 1).
const KERAS_EXTENSIONS = [".keras", ".weights.h5", ".h5", ".hdf5"];

/**
 * How the scanner treats one directory entry:
 * - `file`: a single-file checkpoint;
 * - `folder`: a folder that is one checkpoint as a whole (Hugging Face `checkpoint-500/`, or a
 *   folder named like a checkpoint file, as DeepSpeed writes `epoch=1-step=100.ckpt/`);
 * - `tf_index`: the `.index` file of a TensorFlow checkpoint `prefix`;
 * - `tf_part`: a data shard (or TF1 `.meta`) of the TensorFlow checkpoint `prefix`;
 * - `other`: anything else (a folder of it may still hold checkpoints).
 */
export type EntryKind =
  | { kind: "file" | "folder"; name: CheckpointName }
  | { kind: "tf_index"; prefix: string; name: CheckpointName }
  | { kind: "tf_part"; prefix: string }
  | { kind: "other" }
  | { kind: "ignored" };

// Names that are being written (or are scratch): never a checkpoint, never descended into.
// Hugging Face Trainer (some versions) writes `tmp-checkpoint-500/` and renames it when done.
const TEMP_SUFFIXES = [".tmp", ".temp", ".part", ".partial", ".incomplete", ".lock", "~"];
const TEMP_PREFIX = /^(tmp|temp)[-_.]/i;
// Files that carry a checkpoint extension but are not model state. `training_args.bin` sits
// beside every Hugging Face `save_model`; `rng_state*.pth` only ever lives inside a
// checkpoint folder.
const NOT_CHECKPOINTS = [/^training_args\.bin$/, /^rng_state(_\d+)?\.pth$/];

/** A Hugging Face Trainer checkpoint folder, `checkpoint-<step>`. */
export const HF_FOLDER = /^checkpoint-(\d{1,15})$/;
const TF_INDEX = /^(.+)\.index$/;
const TF_DATA = /^(.+)\.data-\d{5}-of-\d{5}$/;
const TF_META = /^(.+)\.meta$/;
// A TensorFlow prefix names its step as `<name>.ckpt-<n>` or `ckpt-<n>` (tf.train.Checkpoint).
const TF_PREFIX = /(?:^|[._-])ckpt-(\d{1,15})$/;
const LIGHTNING_LAST = /^last(-v\d+)?$/;

// Generic step and epoch markers in a name, kept to spellings that leave no doubt: a keyword,
// an optional `=`, `_` or `-`, digits, then the end or a separator. `model_500.pt` says
// nothing: that number could be anything.
const END = "(?=$|[^a-zA-Z0-9])";
const START = "(?:^|(?<=[^a-zA-Z0-9]))";
const STEP_MARKER = new RegExp(
  `${START}(?:global_step|step|steps|iter|iteration)[=_-]?(\\d{1,15})${END}`,
  "gi",
);
// `ckpt-500`, `checkpoint_500`: a checkpoint counter is a step.
const CKPT_COUNTER = new RegExp(`${START}(?:ckpt|checkpoint)[=_-]?(\\d{1,15})${END}`, "gi");
const EPOCH_MARKER = new RegExp(`${START}(?:epoch|epochs)[=_-]?(\\d{1,15})${END}`, "gi");

/** True for names that are scratch or still being written: `.x`, `x.tmp`, `x.part`, `tmp-x`. */
export function isTemporaryName(name: string): boolean {
  if (name.startsWith(".") || TEMP_PREFIX.test(name)) return true;
  const lower = name.toLowerCase();
  return TEMP_SUFFIXES.some((s) => lower.endsWith(s));
}

/**
 * The step and epoch a checkpoint name carries, or null when the name is not a checkpoint's:
 * `model_step1000.pt` → step 1000, `epoch=2-step=300.ckpt` → both, `checkpoint-500` (a Hugging
 * Face folder) → step 500, `m.ckpt-7.index` or `m.ckpt-7` (TensorFlow) → step 7, `last.ckpt`
 * → neither; `events.out.tfevents.1`, `m.ckpt-7.data-00000-of-00001`, `x.pt.tmp` → null.
 */
export function parseCheckpointName(name: string): CheckpointName | null {
  if (isTemporaryName(name)) return null;
  const hf = HF_FOLDER.exec(name);
  if (hf) return { step: Number(hf[1]), epoch: null };
  const index = TF_INDEX.exec(name);
  if (index) return TF_PREFIX.test(index[1]) ? stepAndEpoch(index[1]) : null;
  if (TF_PREFIX.test(name)) return stepAndEpoch(name);
  const ext = checkpointExtension(name);
  if (ext === null || NOT_CHECKPOINTS.some((re) => re.test(name))) return null;
  return stepAndEpoch(name.slice(0, name.length - ext.length), KERAS_EXTENSIONS.includes(ext));
}

/**
 * How the scanner treats a directory entry called `name`. `tfIndexNeedsStep` false lets a
 * `<prefix>.index` count as a TensorFlow checkpoint without a `ckpt-<n>` in its prefix (the
 * scanner says so when data shards of the same prefix sit beside it).
 */
export function classifyEntry(
  name: string,
  isDirectory: boolean,
  options: { tfIndexNeedsStep?: boolean } = {},
): EntryKind {
  if (isTemporaryName(name)) return { kind: "ignored" };
  if (isDirectory) {
    const hf = HF_FOLDER.exec(name);
    if (hf) return { kind: "folder", name: { step: Number(hf[1]), epoch: null } };
    const ext = checkpointExtension(name);
    if (ext !== null) {
      return { kind: "folder", name: stepAndEpoch(name.slice(0, name.length - ext.length)) };
    }
    return { kind: "other" };
  }
  const data = TF_DATA.exec(name);
  if (data) return { kind: "tf_part", prefix: data[1] };
  const index = TF_INDEX.exec(name);
  if (index) {
    const prefix = index[1];
    if (TF_PREFIX.test(prefix) || options.tfIndexNeedsStep === false) {
      return { kind: "tf_index", prefix, name: stepAndEpoch(prefix) };
    }
    return { kind: "other" };
  }
  const meta = TF_META.exec(name);
  if (meta && TF_PREFIX.test(meta[1])) return { kind: "tf_part", prefix: meta[1] };
  const parsed = checkpointExtension(name) === null ? null : parseCheckpointName(name);
  return parsed ? { kind: "file", name: parsed } : { kind: "other" };
}

/** The TensorFlow checkpoint prefix a data shard name belongs to, or null. */
export function tfDataPrefix(name: string): string | null {
  return TF_DATA.exec(name)?.[1] ?? null;
}

function checkpointExtension(name: string): string | null {
  const lower = name.toLowerCase();
  const ext = CHECKPOINT_EXTENSIONS.find((e) => lower.endsWith(e) && lower.length > e.length);
  return ext ?? null;
}

function stepAndEpoch(stem: string, keras = false): CheckpointName {
  if (LIGHTNING_LAST.test(stem)) return { step: null, epoch: null };
  const step = onlyValue(stem, STEP_MARKER) ?? onlyValue(stem, CKPT_COUNTER);
  const epoch = onlyValue(stem, EPOCH_MARKER);
  if (keras && step === null && epoch === null) return { step, epoch: kerasEpoch(stem) };
  return { step, epoch };
}

// The first whole number between separators that is not part of a decimal (`0.45`).
const BARE_NUMBER = /(?:^|[._-])(\d{1,9})(?=$|[._-])/g;

function kerasEpoch(stem: string): number | null {
  for (const m of stem.matchAll(BARE_NUMBER)) {
    const start = m.index + m[0].length - m[1].length;
    const end = start + m[1].length;
    const decimalTail = stem[end] === "." && /\d/.test(stem[end + 1] ?? "");
    const decimalHead = stem[start - 1] === "." && /\d/.test(stem[start - 2] ?? "");
    if (!decimalTail && !decimalHead) return Number(m[1]);
  }
  return null;
}

// The one number a marker carries; two different numbers (`step1_step2`) mean "unclear".
function onlyValue(stem: string, marker: RegExp): number | null {
  const values = new Set([...stem.matchAll(marker)].map((m) => Number(m[1])));
  if (values.size !== 1) return null;
  const [value] = values;
  return Number.isSafeInteger(value) ? value : null;
}
