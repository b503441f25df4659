// Test-only: writes Event messages and event files the way TensorFlow and PyTorch do, so
// tests can cover encodings the real fixtures lack (half, packed and unpacked values,
// metadata given only once, NaN).

import { encodeRecord } from "./record_reader.ts";

const utf8 = new TextEncoder();

/** Serializes protobuf fields in the order they are added. */
export class ProtoWriter {
  #bytes: number[] = [];

  varint(field: number, value: number | bigint): this {
    this.#key(field, 0);
    this.#rawVarint(BigInt.asUintN(64, BigInt(value)));
    return this;
  }

  double(field: number, value: number): this {
    this.#key(field, 1);
    this.#fixed(8, (view) => view.setFloat64(0, value, true));
    return this;
  }

  float(field: number, value: number): this {
    this.#key(field, 5);
    this.#fixed(4, (view) => view.setFloat32(0, value, true));
    return this;
  }

  bytes(field: number, value: Uint8Array | ProtoWriter): this {
    const payload = value instanceof ProtoWriter ? value.finish() : value;
    this.#key(field, 2);
    this.#rawVarint(BigInt(payload.length));
    for (const b of payload) this.#bytes.push(b);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, utf8.encode(value));
  }

  finish(): Uint8Array {
    return new Uint8Array(this.#bytes);
  }

  #key(field: number, wire: number): void {
    this.#rawVarint(BigInt((field << 3) | wire));
  }

  #rawVarint(value: bigint): void {
    let v = value;
    while (v >= 0x80n) {
      this.#bytes.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.#bytes.push(Number(v));
  }

  #fixed(size: number, write: (view: DataView) => void): void {
    const view = new DataView(new ArrayBuffer(size));
    write(view);
    for (const b of new Uint8Array(view.buffer)) this.#bytes.push(b);
  }
}

/** A value of `Summary.value`: a TF1/PyTorch simple value or a TF2 tensor. */
export type TestValue =
  | { tag: string; simpleValue: number }
  | { tag: string; tensor: ProtoWriter | Uint8Array; plugin?: string };

/** One serialized Event holding a summary with `values`. */
export function summaryEvent(step: number, wallTime: number, values: TestValue[]): Uint8Array {
  const summary = new ProtoWriter();
  for (const value of values) {
    const v = new ProtoWriter().string(1, value.tag);
    if ("simpleValue" in value) {
      v.float(2, value.simpleValue);
    } else {
      if (value.plugin !== undefined) {
        const pluginData = new ProtoWriter().string(1, value.plugin).bytes(
          2,
          new Uint8Array([8, 1]),
        );
        v.bytes(9, new ProtoWriter().bytes(1, pluginData));
      }
      v.bytes(8, value.tensor);
    }
    summary.bytes(1, v);
  }
  return new ProtoWriter().double(1, wallTime).varint(2, step).bytes(5, summary).finish();
}

/** The first event of every file: `file_version`. */
export function fileVersionEvent(wallTime: number): Uint8Array {
  return new ProtoWriter().double(1, wallTime).string(3, "brain.Event:2").finish();
}

/** Frames events as an event file's bytes. */
export function eventFileBytes(events: Uint8Array[]): Uint8Array {
  const records = events.map(encodeRecord);
  const out = new Uint8Array(records.reduce((n, r) => n + r.length, 0));
  let at = 0;
  for (const record of records) {
    out.set(record, at);
    at += record.length;
  }
  return out;
}

/**
 * The event the TensorBoard hparams plugin writes at a session's start (Keras
 * `hp.KerasCallback`, PyTorch `add_hparams`): tag `_hparams_/session_start_info`, plugin
 * `hparams`, content an `HParamsPluginData{version: 0, session_start_info{hparams}}`.
 */
export function hparamsSessionEvent(
  wallTime: number,
  hparams: Record<string, string | number | boolean>,
): Uint8Array {
  const session = new ProtoWriter();
  for (const [name, value] of Object.entries(hparams)) {
    const v = new ProtoWriter();
    if (typeof value === "number") v.double(2, value);
    else if (typeof value === "string") v.string(3, value);
    else v.varint(4, value ? 1 : 0);
    session.bytes(1, new ProtoWriter().string(1, name).bytes(2, v));
  }
  session.double(5, wallTime);
  const content = new ProtoWriter().varint(1, 0).bytes(3, session);
  const pluginData = new ProtoWriter().string(1, "hparams").bytes(2, content);
  const value = new ProtoWriter().string(1, "_hparams_/session_start_info")
    .bytes(9, new ProtoWriter().bytes(1, pluginData))
    .bytes(8, new ProtoWriter().varint(1, 7)); // an empty DT_STRING tensor, as the plugin writes
  return new ProtoWriter().double(1, wallTime).bytes(5, new ProtoWriter().bytes(1, value))
    .finish();
}

/** An event with one legacy `Summary.Value.histo` (TF1 `tf.summary.histogram`). */
export function histogramEvent(step: number, wallTime: number, tag: string): Uint8Array {
  const histo = new ProtoWriter().double(1, 0).double(2, 1).double(3, 10);
  const value = new ProtoWriter().string(1, tag).bytes(5, histo);
  return new ProtoWriter().double(1, wallTime).varint(2, step)
    .bytes(5, new ProtoWriter().bytes(1, value)).finish();
}

/** An event carrying a serialized `GraphDef` (its bytes do not matter to a scalar reader). */
export function graphEvent(wallTime: number): Uint8Array {
  return new ProtoWriter().double(1, wallTime).bytes(4, new Uint8Array([10, 0])).finish();
}
