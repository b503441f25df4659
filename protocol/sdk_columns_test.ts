import { assertEquals } from "../tests/assert.ts";
import { decodeColumns } from "./sdk_columns.ts";
import { partitionSdkBatch } from "./sdk_batch.ts";

/** Base64 of little-endian float64s (or int64s, given as bigints). */
function column(numbers: (number | bigint)[]): string {
  const view = new DataView(new ArrayBuffer(numbers.length * 8));
  numbers.forEach((n, i) =>
    typeof n === "bigint" ? view.setBigInt64(i * 8, n, true) : view.setFloat64(i * 8, n, true)
  );
  return new Uint8Array(view.buffer).toBase64();
}

const steps = (...s: number[]) => column(s.map(BigInt));

/** A valid group of 3 rows × 2 keys; `change` replaces fields. */
function group(change: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    keys: ["loss", "lr"],
    steps: steps(0, 1, 9007199254740991),
    wall_times: column([1767225600.125, 1767225600.5, 0]),
    values: [column([0.5, Number.NaN, -0]), column([Infinity, -Infinity, 1e-300])],
    ...change,
  };
}

Deno.test("decodeColumns() gives the rows of a group, row by row, NaN and ±Infinity spelled as rows spell them", () => {
  const { points, refused } = decodeColumns([group()], 100);
  assertEquals(refused, []);
  assertEquals(points, [
    { key: "loss", step: 0, value: 0.5, wall_time: 1767225600.125 },
    { key: "lr", step: 0, value: "Infinity", wall_time: 1767225600.125 },
    { key: "loss", step: 1, value: "NaN", wall_time: 1767225600.5 },
    { key: "lr", step: 1, value: "-Infinity", wall_time: 1767225600.5 },
    { key: "loss", step: 9007199254740991, value: -0, wall_time: 0 },
    { key: "lr", step: 9007199254740991, value: 1e-300, wall_time: 0 },
  ]);
  assertEquals(Object.is(points[4].value, -0), true); // the sign of a zero is kept
});

Deno.test("decodeColumns() refuses a malformed group whole, naming the field of its first fault, and keeps the others", () => {
  const cases: [Record<string, unknown> | unknown, string, string][] = [
    ["not a group", "columns.1", "must be an object"],
    [group({ extra: 1 }), "columns.1.extra", "is not a field of a column group"],
    [group({ keys: [] }), "columns.1.keys", "non-empty array"],
    [group({ keys: "loss" }), "columns.1.keys", "non-empty array"],
    [group({ keys: ["loss", "nul\u0000"] }), "columns.1.keys.1", "control characters"],
    [group({ keys: ["loss", "x".repeat(201)] }), "columns.1.keys.1", "200"],
    [group({ keys: ["loss", "loss"] }), "columns.1.keys.1", 'repeats the key "loss"'],
    [group({ steps: undefined }), "columns.1.steps", "base64 string"],
    [group({ steps: "AAAA AAAAAAA=" }), "columns.1.steps", "base64 string"],
    [group({ steps: "AAAAAAAAAA" }), "columns.1.steps", "base64 string"], // no padding
    [group({ steps: "AAAA" }), "columns.1.steps", "3 bytes"],
    [group({ steps: "" }), "columns.1.steps", "0 bytes"],
    [group({ steps: steps(0, -1, 2) }), "columns.1.steps.1", "it is -1"],
    [group({ steps: steps(0, 1, 2 ** 53) }), "columns.1.steps.2", "from 0 to 9007199254740991"],
    [
      group({ steps: column([0n, 1n, 9223372036854775807n]) }),
      "columns.1.steps.2",
      "far outside",
    ],
    [group({ wall_times: column([1, 2]) }), "columns.1.wall_times", "must hold 3 times"],
    [group({ wall_times: column([1, -2, 3]) }), "columns.1.wall_times.1", ">= 0"],
    [group({ wall_times: column([1, Number.NaN, 3]) }), "columns.1.wall_times.1", "finite"],
    [group({ values: [column([1, 2, 3])] }), "columns.1.values", "2 columns, one per key"],
    [group({ values: "x" }), "columns.1.values", "2 columns"],
    [
      group({ values: [column([1, 2, 3]), column([1, 2])] }),
      "columns.1.values.1",
      "must hold 3 values",
    ],
    [group({ values: [column([1, 2, 3]), 7] }), "columns.1.values.1", "base64 string"],
  ];
  for (const [bad, path, words] of cases) {
    const { points, refused } = decodeColumns([group(), bad, group({ keys: ["a", "b"] })], 100);
    assertEquals(refused.length, 1, path);
    assertEquals(refused[0].path, path);
    assertEquals(refused[0].message.includes(words), true, `${path}: ${refused[0].message}`);
    // Nothing of the bad group; all of the good ones.
    assertEquals(points.map((p) => p.key).join(","), "loss,lr,loss,lr,loss,lr,a,b,a,b,a,b");
  }
  assertEquals(decodeColumns({}, 100).refused, [
    { path: "columns", message: "must be an array of groups" },
  ]);
});

Deno.test("decodeColumns() refuses a group past the points a batch may still carry", () => {
  const { points, refused } = decodeColumns([group(), group()], 10);
  assertEquals(points.length, 6);
  assertEquals(refused, [{
    path: "columns.1",
    message: "holds 6 points, past the 10 more this batch may carry",
  }]);
});

Deno.test("partitionSdkBatch() turns columns into the rows it stores and forwards, after rows sent as rows", () => {
  const parts = partitionSdkBatch({
    points: [{ key: "old", step: 5, value: "NaN" }],
    columns: [group(), group({ keys: ["bad\u0000", "lr"] })],
    step: 9007199254740991,
  })!;
  assertEquals(parts.refused, {
    count: 1,
    items: [{
      path: "columns.1.keys.0",
      message: "must not contain control characters or lone surrogates",
    }],
  });
  const raw = parts.raw.points as { key: string; step: number; value: unknown }[];
  assertEquals(raw.length, 7);
  assertEquals(raw[0], { key: "old", step: 5, value: "NaN" });
  assertEquals(raw[3], { key: "loss", step: 1, value: "NaN", wall_time: 1767225600.5 });
  assertEquals("columns" in parts.raw, false); // what goes on is rows only
  assertEquals(parts.batch.points!.map((p) => p.value), [
    NaN,
    0.5,
    Infinity,
    NaN,
    -Infinity,
    -0,
    1e-300,
  ]);
  // Nothing valid: nothing kept, the fault named.
  const bad = partitionSdkBatch({ columns: [group({ steps: "AA==" })] })!;
  assertEquals(bad.raw, {});
  assertEquals(bad.refused.items.map((i) => i.path), ["columns.0.steps"]);
});
