import { assertEquals } from "../tests/assert.ts";
import { decodeMetricValue, encodeMetricValue, metricValue } from "./metric_value.ts";

Deno.test("metric values survive JSON: NaN and ±Infinity travel as strings", () => {
  const values = [0, -1.5, 3e300, NaN, Infinity, -Infinity];
  const wire = JSON.parse(JSON.stringify(values.map(encodeMetricValue)));
  assertEquals(wire, [0, -1.5, 3e300, "NaN", "Infinity", "-Infinity"]);
  assertEquals(wire.map(decodeMetricValue), values);
  assertEquals(wire.map((v: unknown) => metricValue.parse(v)), values);
});

Deno.test("decodeMetricValue() reads numbers and the three spellings only", () => {
  assertEquals(["nan", "inf", "1.5", null, {}].map(decodeMetricValue), [
    null,
    null,
    null,
    null,
    null,
  ]);
  assertEquals(metricValue.safeParse("nan").success, false);
});
