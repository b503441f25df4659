import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  fixturePath,
  KERAS_TRAIN,
  KERAS_VALIDATION,
  TORCH_NEWER,
  TORCH_OLDER,
} from "./_fixtures.ts";
import { crc32c, maskCrc32c } from "./crc32c.ts";
import { encodeRecord, readRecords, RECORD_OVERHEAD } from "./record_reader.ts";

const FILES = [KERAS_TRAIN, KERAS_VALIDATION, TORCH_OLDER, TORCH_NEWER];

/** Start offsets of every record, found from the lengths alone. */
function recordStarts(bytes: Uint8Array): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const starts: number[] = [];
  for (let at = 0; at < bytes.length; at += view.getUint32(at, true) + RECORD_OVERHEAD) {
    starts.push(at);
  }
  return starts;
}

Deno.test("readRecords() frames every fixture to its end with no bad CRC", async () => {
  for (const file of FILES) {
    const bytes = await Deno.readFile(fixturePath(file));
    const batch = readRecords(bytes, 0);
    strictEqual(batch.nextOffset, bytes.length, file);
    strictEqual(batch.records.length, recordStarts(bytes).length, file);
    strictEqual(batch.badCrc, 0, file);
    strictEqual(batch.framingLost, false, file);
    strictEqual(batch.needed, 0, file);
  }
});

Deno.test("readRecords() leaves a record cut at any byte for the next read", async () => {
  const bytes = await Deno.readFile(fixturePath(TORCH_OLDER));
  const starts = [...recordStarts(bytes), bytes.length];
  for (let cut = 0; cut <= bytes.length; cut++) {
    const batch = readRecords(bytes.subarray(0, cut), 0);
    const complete = starts.filter((start) => start <= cut).length - 1;
    strictEqual(batch.records.length, complete, `cut at ${cut}`);
    strictEqual(batch.nextOffset, starts[complete], `cut at ${cut}`);
    strictEqual(batch.framingLost, false);
    strictEqual(batch.badCrc, 0);
    if (batch.nextOffset < cut) ok(batch.nextOffset + batch.needed > cut, `cut at ${cut}`);
  }
});

Deno.test("readRecords() resumes from an offset inside the buffer", async () => {
  const bytes = await Deno.readFile(fixturePath(TORCH_NEWER));
  const starts = recordStarts(bytes);
  const whole = readRecords(bytes, 0);
  const rest = readRecords(bytes, starts[10]);
  strictEqual(rest.records.length, whole.records.length - 10);
  deepStrictEqual(rest.records, whole.records.slice(10));
});

Deno.test("readRecords() skips and counts a record whose payload CRC is wrong", async () => {
  const bytes = new Uint8Array(await Deno.readFile(fixturePath(TORCH_OLDER)));
  const whole = readRecords(bytes, 0);
  const starts = recordStarts(bytes);
  bytes[starts[40] + 12 + 5] ^= 0x01;
  const batch = readRecords(bytes, 0);
  strictEqual(batch.badCrc, 1);
  strictEqual(batch.framingLost, false);
  strictEqual(batch.nextOffset, bytes.length);
  deepStrictEqual(batch.records, [...whole.records.slice(0, 40), ...whole.records.slice(41)]);
});

Deno.test("readRecords() stops at a header whose length CRC is wrong, keeping what came before", async () => {
  const bytes = new Uint8Array(await Deno.readFile(fixturePath(TORCH_OLDER)));
  const starts = recordStarts(bytes);
  bytes[starts[30] + 1] ^= 0x40; // the length now claims 16 KiB more than the record has
  const batch = readRecords(bytes, 0);
  strictEqual(batch.framingLost, true);
  strictEqual(batch.nextOffset, starts[30]);
  strictEqual(batch.records.length, 30);
  strictEqual(batch.needed, 0);
});

Deno.test("readRecords() treats a length over 2 GiB as lost framing even when its CRC matches", () => {
  const header = new Uint8Array(12);
  const view = new DataView(header.buffer);
  view.setUint32(0, 0, true);
  view.setUint32(4, 1, true); // 4 GiB: more than any protobuf message may be
  view.setUint32(8, maskCrc32c(crc32c(header, 0, 8)), true);
  const batch = readRecords(header, 0);
  strictEqual(batch.framingLost, true);
  strictEqual(batch.nextOffset, 0);
});

Deno.test("encodeRecord() output reads back as the same payload", () => {
  const payload = new TextEncoder().encode("hello, tensorboard");
  const batch = readRecords(encodeRecord(payload), 0);
  deepStrictEqual(batch.records, [payload]);
  strictEqual(batch.nextOffset, payload.length + RECORD_OVERHEAD);
});
