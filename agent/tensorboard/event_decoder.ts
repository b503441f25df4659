// Decodes the scalar values of one serialized `tensorboard.Event`, skipping everything
// else (graphs, histograms, images, audio, text) without decoding it; on request it counts
// what it skipped by kind and decodes the hparams plugin's session (the run's config).
// Messages: tensorboard/compat/proto/{event,summary,tensor,tensor_shape}.proto,
// tensorboard/plugins/hparams/plugin_data.proto, google/protobuf/struct.proto

import { ProtoReader, WireType } from "./protobuf.ts";

/** One scalar as TensorBoard shows it; `wall_time` is Unix seconds (float). */
export interface ScalarPoint {
  tag: string;
  step: number;
  value: number;
  wall_time: number;
}

/** The plugin name TF2 `tf.summary.scalar` puts in a tensor value's metadata. */
export const SCALARS_PLUGIN = "scalars";
/** The plugin of `_hparams_/…` summaries (Keras `hp.KerasCallback`, PyTorch `add_hparams`). */
export const HPARAMS_PLUGIN = "hparams";

/** What a scalar reader leaves out, by kind. */
export type SkippedKind =
  | "histograms"
  | "images"
  | "audio"
  | "text"
  | "graphs"
  | "run_metadata"
  | "other";

/**
 * Per-file notes a caller may keep while decoding: what was skipped, and the hparams of a
 * session. `tagKinds` remembers the kind of each non-scalar tag, since TF2 writers attach the
 * plugin name only to a tag's first value in a file.
 */
export interface EventNotes {
  skipped: Partial<Record<SkippedKind, number>>;
  tagKinds: Map<string, SkippedKind>;
  /** The hparams of the newest `_hparams_/session_start_info` seen, or null. */
  hparams: Record<string, string | number | boolean | null> | null;
}

/** Empty notes for one file. */
export function createEventNotes(): EventNotes {
  return { skipped: {}, tagKinds: new Map(), hparams: null };
}

const PLUGIN_KINDS: Record<string, SkippedKind> = {
  histograms: "histograms",
  distributions: "histograms",
  images: "images",
  audio: "audio",
  text: "text",
  graph_keras_model: "graphs",
  graphs: "graphs",
};

// tensorflow/core/framework/types.proto
const DT_FLOAT = 1;
const DT_DOUBLE = 2;
const DT_BFLOAT16 = 14;
const DT_HALF = 19;

// Field numbers, per message.
const EVENT_WALL_TIME = 1;
const EVENT_STEP = 2;
const EVENT_GRAPH_DEF = 4;
const EVENT_SUMMARY = 5;
const EVENT_TAGGED_RUN_METADATA = 8;
const EVENT_META_GRAPH_DEF = 9;
const SUMMARY_VALUE = 1;
const VALUE_TAG = 1;
const VALUE_SIMPLE_VALUE = 2;
const VALUE_IMAGE = 4;
const VALUE_HISTO = 5;
const VALUE_AUDIO = 6;
const VALUE_TENSOR = 8;
const VALUE_METADATA = 9;
const METADATA_PLUGIN_DATA = 1;
const PLUGIN_DATA_PLUGIN_NAME = 1;
const PLUGIN_DATA_CONTENT = 2;
// HParamsPluginData.session_start_info, SessionStartInfo.hparams (a map: key 1, value 2).
const HPARAMS_SESSION_START_INFO = 3;
const SESSION_HPARAMS = 1;
// google.protobuf.Value
const STRUCT_NULL = 1;
const STRUCT_NUMBER = 2;
const STRUCT_STRING = 3;
const STRUCT_BOOL = 4;
const TENSOR_DTYPE = 1;
const TENSOR_SHAPE = 2;
const TENSOR_CONTENT = 4;
const TENSOR_FLOAT_VAL = 5;
const TENSOR_DOUBLE_VAL = 6;
const TENSOR_HALF_VAL = 13;
const SHAPE_DIM = 2;
const DIM_SIZE = 1;

const scratch = new DataView(new ArrayBuffer(4));

/**
 * Returns the scalars in one serialized Event: TF1/PyTorch `simple_value`s and TF2 tensor
 * values of the `scalars` plugin (float32, float64, half, bfloat16), NaN and ±Infinity kept.
 *
 * `scalarTags` is the caller's per-file memory of tags known to be scalars, and is updated:
 * TF2 writers attach the plugin metadata only to a tag's first value in a file, so later
 * values are recognised by tag alone (TensorBoard keeps the first metadata per tag too).
 * Throws `ProtobufError` when the bytes are not a well-formed message.
 */
export function decodeScalars(
  event: Uint8Array,
  scalarTags: Set<string>,
  notes?: EventNotes,
): ScalarPoint[] {
  const reader = new ProtoReader(event);
  let wallTime = 0;
  let step = 0;
  let summary: Uint8Array | undefined;
  while (!reader.done) {
    const key = reader.key();
    const field = key >>> 3;
    const wire = key & 7;
    if (field === EVENT_WALL_TIME && wire === WireType.I64) wallTime = reader.double();
    else if (field === EVENT_STEP && wire === WireType.VARINT) step = reader.int64();
    // Fields may come in any order, so the summary is decoded once the step is known.
    else if (field === EVENT_SUMMARY && wire === WireType.LEN) summary = reader.bytesField();
    else {
      if (notes && wire === WireType.LEN) {
        if (field === EVENT_GRAPH_DEF || field === EVENT_META_GRAPH_DEF) count(notes, "graphs");
        else if (field === EVENT_TAGGED_RUN_METADATA) count(notes, "run_metadata");
      }
      reader.skip(wire);
    }
  }
  if (summary === undefined) return [];
  const points: ScalarPoint[] = [];
  const values = new ProtoReader(summary);
  while (!values.done) {
    const key = values.key();
    if (key >>> 3 === SUMMARY_VALUE && (key & 7) === WireType.LEN) {
      const point = decodeValue(values.bytesField(), scalarTags, notes);
      if (point) points.push({ tag: point.tag, step, value: point.value, wall_time: wallTime });
    } else {
      values.skip(key & 7);
    }
  }
  return points;
}

function count(notes: EventNotes, kind: SkippedKind): void {
  notes.skipped[kind] = (notes.skipped[kind] ?? 0) + 1;
}

function decodeValue(
  bytes: Uint8Array,
  scalarTags: Set<string>,
  notes: EventNotes | undefined,
): { tag: string; value: number } | undefined {
  const reader = new ProtoReader(bytes);
  let tag = "";
  let simpleValue: number | undefined;
  let tensor: Uint8Array | undefined;
  let plugin: PluginData = { name: "", content: undefined };
  let legacy: SkippedKind | undefined;
  while (!reader.done) {
    const key = reader.key();
    const field = key >>> 3;
    const wire = key & 7;
    if (field === VALUE_TAG && wire === WireType.LEN) tag = reader.string();
    else if (field === VALUE_SIMPLE_VALUE && wire === WireType.I32) simpleValue = reader.float();
    // Kept as a view: only a scalar tag's tensor is ever decoded.
    else if (field === VALUE_TENSOR && wire === WireType.LEN) tensor = reader.bytesField();
    else if (field === VALUE_METADATA && wire === WireType.LEN) {
      plugin = readPluginData(reader.bytesField());
    } else {
      if (wire === WireType.LEN) {
        if (field === VALUE_HISTO) legacy = "histograms";
        else if (field === VALUE_IMAGE) legacy = "images";
        else if (field === VALUE_AUDIO) legacy = "audio";
      }
      reader.skip(wire);
    }
  }
  if (simpleValue !== undefined) return { tag, value: simpleValue };
  if (tensor !== undefined && plugin.name === SCALARS_PLUGIN) scalarTags.add(tag);
  if (
    tensor !== undefined && scalarTags.has(tag) &&
    (plugin.name === "" || plugin.name === SCALARS_PLUGIN)
  ) {
    const value = tensorScalar(tensor);
    if (value !== undefined) return { tag, value };
  }
  if (notes) noteSkipped(notes, tag, plugin, legacy);
  return undefined;
}

/** Counts a value that is not a scalar; an hparams session becomes the notes' hparams. */
function noteSkipped(
  notes: EventNotes,
  tag: string,
  plugin: PluginData,
  legacy: SkippedKind | undefined,
): void {
  if (plugin.name === HPARAMS_PLUGIN) {
    const hparams = plugin.content ? sessionHparams(plugin.content) : null;
    if (hparams) notes.hparams = hparams;
    return;
  }
  let kind = legacy ?? (plugin.name !== "" ? PLUGIN_KINDS[plugin.name] ?? "other" : undefined);
  if (kind !== undefined) notes.tagKinds.set(tag, kind);
  else kind = notes.tagKinds.get(tag) ?? "other";
  count(notes, kind);
}

interface PluginData {
  name: string;
  /** Kept (as a view) only for the hparams plugin: other plugins' content can be large. */
  content: Uint8Array | undefined;
}

function readPluginData(metadata: Uint8Array): PluginData {
  const reader = new ProtoReader(metadata);
  let name = "";
  let content: Uint8Array | undefined;
  while (!reader.done) {
    const key = reader.key();
    if (key >>> 3 === METADATA_PLUGIN_DATA && (key & 7) === WireType.LEN) {
      const pluginData = new ProtoReader(reader.bytesField());
      while (!pluginData.done) {
        const inner = pluginData.key();
        if (inner >>> 3 === PLUGIN_DATA_PLUGIN_NAME && (inner & 7) === WireType.LEN) {
          name = pluginData.string();
        } else if (inner >>> 3 === PLUGIN_DATA_CONTENT && (inner & 7) === WireType.LEN) {
          content = pluginData.bytesField();
        } else pluginData.skip(inner & 7);
      }
    } else {
      reader.skip(key & 7);
    }
  }
  return { name, content: name === HPARAMS_PLUGIN ? content : undefined };
}

/**
 * The hparams map of an `HParamsPluginData` holding a `session_start_info`; null for the
 * plugin's other messages (the experiment, the session end). Values are strings, numbers,
 * booleans or null; nested structs and lists (which the plugin does not write) are left out.
 */
export function sessionHparams(
  pluginContent: Uint8Array,
): Record<string, string | number | boolean | null> | null {
  const data = new ProtoReader(pluginContent);
  let session: Uint8Array | undefined;
  while (!data.done) {
    const key = data.key();
    if (key >>> 3 === HPARAMS_SESSION_START_INFO && (key & 7) === WireType.LEN) {
      session = data.bytesField();
    } else data.skip(key & 7);
  }
  if (session === undefined) return null;
  const out: Record<string, string | number | boolean | null> = {};
  const info = new ProtoReader(session);
  while (!info.done) {
    const key = info.key();
    if (key >>> 3 !== SESSION_HPARAMS || (key & 7) !== WireType.LEN) {
      info.skip(key & 7);
      continue;
    }
    const entry = new ProtoReader(info.bytesField());
    let name = "";
    let value: string | number | boolean | null | undefined;
    while (!entry.done) {
      const k = entry.key();
      if (k >>> 3 === 1 && (k & 7) === WireType.LEN) name = entry.string();
      else if (k >>> 3 === 2 && (k & 7) === WireType.LEN) value = structValue(entry.bytesField());
      else entry.skip(k & 7);
    }
    if (value !== undefined) out[name] = value;
  }
  return out;
}

function structValue(bytes: Uint8Array): string | number | boolean | null | undefined {
  const reader = new ProtoReader(bytes);
  let value: string | number | boolean | null | undefined;
  while (!reader.done) {
    const key = reader.key();
    const field = key >>> 3;
    const wire = key & 7;
    if (field === STRUCT_NULL && wire === WireType.VARINT) {
      reader.int32();
      value = null;
    } else if (field === STRUCT_NUMBER && wire === WireType.I64) value = reader.double();
    else if (field === STRUCT_STRING && wire === WireType.LEN) value = reader.string();
    else if (field === STRUCT_BOOL && wire === WireType.VARINT) value = reader.int32() !== 0;
    else reader.skip(wire);
  }
  return value;
}

/** The single element of a one-element float tensor, or undefined for anything else. */
function tensorScalar(bytes: Uint8Array): number | undefined {
  const reader = new ProtoReader(bytes);
  let dtype = 0;
  let elements = 1;
  let content: Uint8Array | undefined;
  let floatVal: number | undefined;
  let doubleVal: number | undefined;
  let halfVal: number | undefined;
  while (!reader.done) {
    const key = reader.key();
    const field = key >>> 3;
    const wire = key & 7;
    if (field === TENSOR_DTYPE && wire === WireType.VARINT) dtype = reader.int32();
    else if (field === TENSOR_SHAPE && wire === WireType.LEN) {
      elements = countElements(reader.bytesField());
    } else if (field === TENSOR_CONTENT && wire === WireType.LEN) content = reader.bytesField();
    // Repeated numeric fields may arrive packed (one LEN field) or one value per field.
    else if (field === TENSOR_FLOAT_VAL && wire === WireType.LEN) {
      floatVal ??= firstPacked(reader.bytesField(), (r) => r.float());
    } else if (field === TENSOR_FLOAT_VAL && wire === WireType.I32) {
      const v = reader.float();
      floatVal ??= v;
    } else if (field === TENSOR_DOUBLE_VAL && wire === WireType.LEN) {
      doubleVal ??= firstPacked(reader.bytesField(), (r) => r.double());
    } else if (field === TENSOR_DOUBLE_VAL && wire === WireType.I64) {
      const v = reader.double();
      doubleVal ??= v;
    } else if (field === TENSOR_HALF_VAL && wire === WireType.LEN) {
      halfVal ??= firstPacked(reader.bytesField(), (r) => r.int32());
    } else if (field === TENSOR_HALF_VAL && wire === WireType.VARINT) {
      const v = reader.int32();
      halfVal ??= v;
    } else reader.skip(wire);
  }
  if (elements !== 1) return undefined;
  const view = content !== undefined && content.length > 0
    ? new DataView(content.buffer, content.byteOffset, content.length)
    : undefined;
  switch (dtype) {
    case DT_FLOAT:
      if (view) return view.byteLength === 4 ? view.getFloat32(0, true) : undefined;
      return floatVal;
    case DT_DOUBLE:
      if (view) return view.byteLength === 8 ? view.getFloat64(0, true) : undefined;
      return doubleVal;
    case DT_HALF:
    case DT_BFLOAT16: {
      const bits = view ? (view.byteLength === 2 ? view.getUint16(0, true) : undefined) : halfVal;
      if (bits === undefined) return undefined;
      return dtype === DT_HALF ? halfToNumber(bits) : bfloat16ToNumber(bits);
    }
    default:
      return undefined;
  }
}

function countElements(shape: Uint8Array): number {
  const reader = new ProtoReader(shape);
  let elements = 1;
  while (!reader.done) {
    const key = reader.key();
    if (key >>> 3 === SHAPE_DIM && (key & 7) === WireType.LEN) {
      const dim = new ProtoReader(reader.bytesField());
      let size = 0;
      while (!dim.done) {
        const inner = dim.key();
        if (inner >>> 3 === DIM_SIZE && (inner & 7) === WireType.VARINT) size = dim.int64();
        else dim.skip(inner & 7);
      }
      elements *= size;
    } else {
      reader.skip(key & 7);
    }
  }
  return elements;
}

function firstPacked(bytes: Uint8Array, read: (r: ProtoReader) => number): number | undefined {
  return bytes.length === 0 ? undefined : read(new ProtoReader(bytes));
}

/** IEEE 754 binary16 bits to a number; TensorProto keeps them in the low 16 bits of an int32. */
export function halfToNumber(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const fraction = bits & 0x3ff;
  if (exponent === 0) return sign * fraction * 2 ** -24;
  if (exponent === 0x1f) return fraction === 0 ? sign * Infinity : NaN;
  return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
}

function bfloat16ToNumber(bits: number): number {
  scratch.setUint32(0, (bits & 0xffff) << 16);
  return scratch.getFloat32(0);
}
