import { assertEquals, assertThrows } from "../../tests/assert.ts";
import { packNumbers, packSeries, unpackNumbers, unpackSeries } from "./packed.ts";
import { fromApi } from "./series.ts";

Deno.test("packNumbers() and unpackNumbers() keep every float64 exactly, NaN and ±Infinity too", () => {
  const xs = [0, -0, 1, 0.1, 1 / 3, -2.5e-300, 1.7976931348623157e308, 1_780_000_000.123456, NaN];
  xs.push(Infinity, -Infinity, 5e-324, 2 ** 53 + 2);
  for (let n = 0; n <= xs.length; n++) {
    assertEquals(unpackNumbers(packNumbers(xs.slice(0, n))), xs.slice(0, n), `${n} numbers`);
  }
  // Standard base64: the same text `btoa` writes for the same bytes.
  const bytes = new Uint8Array(new Float64Array([0.1, 2]).buffer);
  assertEquals(packNumbers([0.1, 2]), btoa(String.fromCharCode(...bytes)));
  assertEquals(packNumbers([1, 2, 3]).length, Math.ceil(24 / 3) * 4);
});

Deno.test("unpackNumbers() refuses text that is not packed numbers", () => {
  assertThrows(() => unpackNumbers("abc"), "length 3");
  assertThrows(() => unpackNumbers("ab!d"), '"!" is not base64');
  assertThrows(() => unpackNumbers(btoa("12345")), "5 bytes");
});

Deno.test("unpackSeries(packSeries(s)) is the series as the panel reads it from the API", () => {
  const api = {
    run_id: "r1",
    key: "loss",
    steps: [0, 5, 10, 1_000_000, 1_000_001],
    values: [4.25, "NaN", 0.1 + 0.2, "Infinity", "-Infinity"] as (number | string)[],
    wall_times: [1_780_000_000.5, 1_780_000_001.25, 1_780_000_002, 1_780_000_003, 1_780_000_004],
    min: [4, "NaN", 0.3, 1e-9, -1e9] as (number | string)[],
    max: [4.5, "NaN", 0.30000000000000004, 1e9, 7] as (number | string)[],
    total_points: 2_000_000,
    downsampled: true,
  };
  const packed = packSeries(api);
  assertEquals(packed.step_deltas, [0, 5, 5, 999_990, 1]);
  assertEquals(unpackSeries(packed), fromApi(api));
  const plain = { ...api, min: undefined, max: undefined, downsampled: false };
  assertEquals(unpackSeries(packSeries(plain)), fromApi(plain));
  // JSON carries it unchanged, and it is shorter than the API's JSON.
  assertEquals(unpackSeries(JSON.parse(JSON.stringify(packed))), fromApi(api));
  const many = {
    ...plain,
    steps: Array.from({ length: 1000 }, (_, i) => i * 10),
    values: Array.from({ length: 1000 }, (_, i) => Math.exp(-i / 300) + Math.sin(i) / 100),
    wall_times: Array.from({ length: 1000 }, (_, i) => 1_780_000_000 + i * 0.731),
  };
  const ratio = JSON.stringify(packSeries(many)).length / JSON.stringify(many).length;
  assertEquals(ratio < 0.75, true, `packed is ${ratio} of the JSON`);
});
