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
