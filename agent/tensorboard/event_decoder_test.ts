import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import {
  fileVersionEvent,
  graphEvent,
  histogramEvent,
  hparamsSessionEvent,
  ProtoWriter,
  summaryEvent,
} from "./_event_writer.ts";
import { closeTo, expectedScalars, fixturePath } from "./_fixtures.ts";
import { createEventNotes, decodeScalars, halfToNumber } from "./event_decoder.ts";
import { ProtobufError } from "./protobuf.ts";
import { readRecords } from "./record_reader.ts";

const DT_FLOAT = 1;
const DT_DOUBLE = 2;
const DT_BFLOAT16 = 14;
const DT_HALF = 19;

/** A TensorProto the way TF writes a scalar: a dtype, an empty shape, then the value. */
function tensor(dtype: number, fill: (w: ProtoWriter) => void, dims: number[] = []): ProtoWriter {
  const shape = new ProtoWriter();
  for (const size of dims) shape.bytes(2, new ProtoWriter().varint(1, size));
  const w = new ProtoWriter().varint(1, dtype).bytes(2, shape);
  fill(w);
  return w;
}

function littleEndian(size: number, write: (view: DataView) => void): Uint8Array {
  const view = new DataView(new ArrayBuffer(size));
  write(view);
  return new Uint8Array(view.buffer);
}

const floatContent = (v: number) =>
  tensor(DT_FLOAT, (w) => w.bytes(4, littleEndian(4, (d) => d.setFloat32(0, v, true))));

function decodeOne(tensorMessage: ProtoWriter, plugin = "scalars"): number | undefined {
  const event = summaryEvent(7, 1.5, [{ tag: "t", tensor: tensorMessage, plugin }]);
  const points = decodeScalars(event, new Set());
  return points.length === 1 ? points[0].value : undefined;
}

Deno.test("decodeScalars() decodes every scalar of each fixture file alone, as the independent reader did", async () => {
  const expected = await expectedScalars();
  strictEqual(expected.length, 260);
  const files = [...new Set(expected.map((e) => e.file))];
  let matched = 0;
  for (const file of files) {
    const batch = readRecords(await Deno.readFile(fixturePath(file)), 0);
    const scalarTags = new Set<string>();
    const points = batch.records.flatMap((record) => decodeScalars(record, scalarTags));
    const want = expected.filter((e) => e.file === file);
    strictEqual(points.length, want.length, file);
    want.forEach((e, i) => {
      const p = points[i];
      const where = `${file} #${i} (${e.tag}@${e.step})`;
      strictEqual(p.tag, e.tag, where);
      strictEqual(p.step, e.step, where);
      ok(closeTo(p.wall_time, e.wall_time), `${where}: wall_time ${p.wall_time} != ${e.wall_time}`);
      ok(closeTo(p.value, e.value), `${where}: value ${p.value} != ${e.value}`);
      matched++;
    });
  }
  strictEqual(matched, 260);
});

Deno.test("decodeScalars() keeps simple_value scalars, zero included, with step and wall time", () => {
  const event = summaryEvent(12, 1700000000.25, [
    { tag: "loss", simpleValue: 0 },
    { tag: "lr", simpleValue: 0.5 },
  ]);
  deepStrictEqual(decodeScalars(event, new Set()), [
    { tag: "loss", step: 12, value: 0, wall_time: 1700000000.25 },
    { tag: "lr", step: 12, value: 0.5, wall_time: 1700000000.25 },
  ]);
});

Deno.test("decodeScalars() remembers a TF2 scalar tag whose later values carry no metadata", () => {
  const first = summaryEvent(0, 1, [{
    tag: "epoch_loss",
    tensor: floatContent(0.75),
    plugin: "scalars",
  }]);
  const later = summaryEvent(1, 2, [{ tag: "epoch_loss", tensor: floatContent(0.5) }]);
  const scalarTags = new Set<string>();
  strictEqual(decodeScalars(first, scalarTags)[0].value, 0.75);
  deepStrictEqual([...scalarTags], ["epoch_loss"]);
  deepStrictEqual(decodeScalars(later, scalarTags), [
    { tag: "epoch_loss", step: 1, value: 0.5, wall_time: 2 },
  ]);
  // Without the memory of the first value, the tensor's kind is unknown and it is skipped.
  deepStrictEqual(decodeScalars(later, new Set()), []);
});

Deno.test("decodeScalars() reads float, double, half and bfloat16 scalars in every encoding", () => {
  const cases: [string, ProtoWriter, number][] = [
    ["float32 tensor_content", floatContent(0.1), Math.fround(0.1)],
    [
      "float32 packed float_val",
      tensor(DT_FLOAT, (w) => w.bytes(5, littleEndian(4, (d) => d.setFloat32(0, 2.5, true)))),
      2.5,
    ],
    ["float32 unpacked float_val", tensor(DT_FLOAT, (w) => w.float(5, -3.25)), -3.25],
    [
      "float64 tensor_content",
      tensor(DT_DOUBLE, (w) => w.bytes(4, littleEndian(8, (d) => d.setFloat64(0, 0.1, true)))),
      0.1,
    ],
    [
      "float64 packed double_val",
      tensor(DT_DOUBLE, (w) => w.bytes(6, littleEndian(8, (d) => d.setFloat64(0, 1e300, true)))),
      1e300,
    ],
    ["float64 unpacked double_val", tensor(DT_DOUBLE, (w) => w.double(6, -0.1)), -0.1],
    ["half tensor_content", tensor(DT_HALF, (w) => w.bytes(4, new Uint8Array([0x00, 0x3c]))), 1],
    // 0xc000 (-2) as a packed varint.
    [
      "half packed half_val",
      tensor(DT_HALF, (w) => w.bytes(13, new Uint8Array([0x80, 0x80, 0x03]))),
      -2,
    ],
    ["half unpacked half_val", tensor(DT_HALF, (w) => w.varint(13, 0x3555)), 0.333251953125],
    ["bfloat16 half_val", tensor(DT_BFLOAT16, (w) => w.varint(13, 0x3fc0)), 1.5],
    ["one-element shape [1]", tensor(DT_FLOAT, (w) => w.float(5, 4), [1]), 4],
  ];
  for (const [name, message, want] of cases) strictEqual(decodeOne(message), want, name);
});

Deno.test("decodeScalars() keeps NaN and ±Infinity as JS NaN and ±Infinity", () => {
  const event = summaryEvent(3, 9, [
    { tag: "nan", simpleValue: NaN },
    { tag: "inf", simpleValue: Infinity },
    { tag: "ninf", tensor: floatContent(-Infinity), plugin: "scalars" },
    { tag: "half_nan", tensor: tensor(DT_HALF, (w) => w.varint(13, 0x7e00)), plugin: "scalars" },
    { tag: "half_inf", tensor: tensor(DT_HALF, (w) => w.varint(13, 0x7c00)), plugin: "scalars" },
    { tag: "double_nan", tensor: tensor(DT_DOUBLE, (w) => w.double(6, NaN)), plugin: "scalars" },
  ]);
  const values = Object.fromEntries(decodeScalars(event, new Set()).map((p) => [p.tag, p.value]));
  ok(Number.isNaN(values.nan));
  strictEqual(values.inf, Infinity);
  strictEqual(values.ninf, -Infinity);
  ok(Number.isNaN(values.half_nan));
  strictEqual(values.half_inf, Infinity);
  ok(Number.isNaN(values.double_nan));
});

Deno.test("decodeScalars() skips other plugins' tensors without decoding them", () => {
  // Not a valid TensorProto: decoding it would throw, so passing proves it was skipped.
  const garbage = new Uint8Array([0xff, 0xff, 0xff]);
  const scalarTags = new Set<string>();
  const event = summaryEvent(1, 1, [
    { tag: "weights", tensor: garbage, plugin: "histograms" },
    { tag: "note", tensor: garbage, plugin: "text" },
    { tag: "unknown", tensor: garbage },
    { tag: "acc", simpleValue: 0.9 },
  ]);
  deepStrictEqual(decodeScalars(event, scalarTags).map((p) => p.tag), ["acc"]);
  strictEqual(scalarTags.size, 0);
});

Deno.test("decodeScalars() skips TF1 histograms, images and audio and non-scalar tensors", () => {
  const value = (tag: string, field: number) =>
    new ProtoWriter().string(1, tag).bytes(field, new Uint8Array([0xff, 0xff]));
  const summary = new ProtoWriter()
    .bytes(1, value("histo", 5))
    .bytes(1, value("image", 4))
    .bytes(1, value("audio", 6))
    .bytes(1, value("old_histo", 3))
    .bytes(1, new ProtoWriter().string(1, "loss").float(2, 1.25));
  const event = new ProtoWriter().double(1, 5).varint(2, 2).bytes(5, summary).finish();
  deepStrictEqual(decodeScalars(event, new Set()), [{
    tag: "loss",
    step: 2,
    value: 1.25,
    wall_time: 5,
  }]);
  strictEqual(decodeOne(tensor(DT_FLOAT, (w) => w.float(5, 1).float(5, 2), [2])), undefined);
  strictEqual(decodeOne(tensor(7, (w) => w.string(8, "text"))), undefined);
});

Deno.test("decodeScalars() finds the step even when the summary precedes it", () => {
  const summary = new ProtoWriter().bytes(1, new ProtoWriter().string(1, "x").float(2, 3));
  const event = new ProtoWriter().bytes(5, summary).varint(2, -4).double(1, 8).finish();
  deepStrictEqual(decodeScalars(event, new Set()), [{
    tag: "x",
    step: -4,
    value: 3,
    wall_time: 8,
  }]);
});

Deno.test("decodeScalars() returns nothing for events without a summary", () => {
  deepStrictEqual(decodeScalars(fileVersionEvent(1), new Set()), []);
  deepStrictEqual(decodeScalars(new Uint8Array(0), new Set()), []);
});

Deno.test("decodeScalars() throws ProtobufError on bytes that are not an Event", () => {
  throws(() => decodeScalars(new Uint8Array([0x2a, 0x10, 0x01]), new Set()), ProtobufError);
});

Deno.test("halfToNumber() converts normal, subnormal and special binary16 values", () => {
  strictEqual(halfToNumber(0x3c00), 1);
  strictEqual(halfToNumber(0xc000), -2);
  strictEqual(halfToNumber(0x7bff), 65504);
  strictEqual(halfToNumber(0x0001), 2 ** -24);
  strictEqual(halfToNumber(0x8000), -0);
  strictEqual(halfToNumber(0xfc00), -Infinity);
  ok(Number.isNaN(halfToNumber(0x7c01)));
});

Deno.test("decodeScalars() with notes decodes the hparams session into string, number and bool values", () => {
  const notes = createEventNotes();
  const points = decodeScalars(
    hparamsSessionEvent(10, { lr: 0.001, optimizer: "adam", batch_size: 64, amp: true }),
    new Set(),
    notes,
  );
  deepStrictEqual(points, []);
  deepStrictEqual(notes.hparams, { lr: 0.001, optimizer: "adam", batch_size: 64, amp: true });
  deepStrictEqual(notes.skipped, {});
});

Deno.test("decodeScalars() with notes counts what it skips by kind, a tag's kind kept after its first value", () => {
  const notes = createEventNotes();
  const scalarTags = new Set<string>();
  const text = tensor(7, (w) => w.bytes(8, new TextEncoder().encode("hello")));
  const events = [
    graphEvent(1),
    histogramEvent(1, 1, "weights"),
    summaryEvent(1, 1, [{ tag: "notes", tensor: text, plugin: "text" }]),
    // TF2 attaches the plugin only to a tag's first value in a file.
    summaryEvent(2, 2, [{ tag: "notes", tensor: text }]),
    summaryEvent(1, 1, [{ tag: "sample", tensor: text, plugin: "images" }]),
    summaryEvent(1, 1, [{ tag: "loss", tensor: floatContent(0.5), plugin: "scalars" }]),
    summaryEvent(2, 2, [{ tag: "loss", tensor: floatContent(0.25) }]),
  ];
  const points = events.flatMap((e) => decodeScalars(e, scalarTags, notes));
  deepStrictEqual(points.map((p) => [p.tag, p.value]), [["loss", 0.5], ["loss", 0.25]]);
  deepStrictEqual(notes.skipped, { graphs: 1, histograms: 1, text: 2, images: 1 });
});
