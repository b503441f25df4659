import { strictEqual, throws } from "node:assert/strict";
import { ProtoWriter } from "./_event_writer.ts";
import { ProtobufError, ProtoReader, WireType } from "./protobuf.ts";

function readVarintField(value: number | bigint, read: (r: ProtoReader) => number): number {
  const reader = new ProtoReader(new ProtoWriter().varint(1, value).finish());
  strictEqual(reader.key(), (1 << 3) | WireType.VARINT);
  return read(reader);
}

Deno.test("ProtoReader.int64() decodes two's-complement varints exactly up to 2^53", () => {
  for (
    const value of [
      0,
      1,
      127,
      128,
      300,
      2 ** 31,
      2 ** 32 + 5,
      2 ** 53 - 1,
      -1,
      -2,
      -(2 ** 32),
      -(2 ** 53 - 1),
    ]
  ) {
    strictEqual(readVarintField(value, (r) => r.int64()), value, `int64 ${value}`);
  }
});

Deno.test("ProtoReader.uint64() and int32() follow protobuf's rules", () => {
  strictEqual(readVarintField(2 ** 40 + 3, (r) => r.uint64()), 2 ** 40 + 3);
  strictEqual(readVarintField(-5, (r) => r.int32()), -5);
  strictEqual(readVarintField(0x3c00, (r) => r.int32()), 0x3c00);
});

Deno.test("ProtoReader reads fixed-width and length-delimited fields in order", () => {
  const bytes = new ProtoWriter().double(1, Math.PI).float(2, 0.5).string(3, "épöch ✓").bytes(
    4,
    new Uint8Array([1, 2, 3]),
  ).finish();
  const reader = new ProtoReader(bytes);
  strictEqual(reader.key(), (1 << 3) | WireType.I64);
  strictEqual(reader.double(), Math.PI);
  strictEqual(reader.key(), (2 << 3) | WireType.I32);
  strictEqual(reader.float(), 0.5);
  strictEqual(reader.key(), (3 << 3) | WireType.LEN);
  strictEqual(reader.string(), "épöch ✓");
  strictEqual(reader.key(), (4 << 3) | WireType.LEN);
  strictEqual(reader.bytesField().join(), "1,2,3");
  strictEqual(reader.done, true);
});

Deno.test("ProtoReader.skip() steps over each wire type without reading it", () => {
  const bytes = new ProtoWriter().varint(1, -1).double(2, 1).float(3, 1).string(4, "x".repeat(200))
    .varint(5, 42).finish();
  const reader = new ProtoReader(bytes);
  for (let i = 0; i < 4; i++) {
    reader.skip(reader.key() & 7);
  }
  strictEqual(reader.key(), (5 << 3) | WireType.VARINT);
  strictEqual(reader.int64(), 42);
});

Deno.test("ProtoReader throws ProtobufError on truncated or unknown input", () => {
  const bytes = new ProtoWriter().string(1, "hello").finish();
  const truncated = new ProtoReader(bytes.subarray(0, 4));
  truncated.key();
  throws(() => truncated.string(), ProtobufError);
  throws(() => new ProtoReader(new Uint8Array([0x80, 0x80])).key(), ProtobufError);
  throws(() => new ProtoReader(new Uint8Array(11).fill(0xff)).int64(), ProtobufError);
  throws(() => new ProtoReader(new Uint8Array([0])).skip(3), ProtobufError);
  throws(() => new ProtoReader(new Uint8Array([1, 2])).double(), ProtobufError);
});
