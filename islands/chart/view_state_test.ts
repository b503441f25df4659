import fc from "fast-check";
import { assertEquals } from "../../tests/assert.ts";
import { decodeView, DEFAULT_VIEW, encodeView, type ViewState } from "./view_state.ts";
import { formatRelative, xValues } from "./x_axis.ts";

Deno.test("decodeView(encodeView(v)) is v for every view, keys with commas and tildes too", () => {
  const view: fc.Arbitrary<ViewState> = fc.record({
    metrics: fc.array(fc.string({ minLength: 1, maxLength: 12 }), { maxLength: 5 }),
    runs: fc.array(fc.string({ minLength: 1, maxLength: 12 }), { maxLength: 5 }),
    smooth: fc.double({ min: 0, max: 0.999, noNaN: true }),
    x: fc.constantFrom("step" as const, "relative" as const, "wall" as const),
  });
  fc.assert(
    fc.property(view, (v) => {
      // Through the URL's text, as a pasted link travels.
      const text = encodeView(v).toString();
      assertEquals(decodeView(new URLSearchParams(text)), { ...v });
    }),
    { numRuns: 500, seed: 1 },
  );
});

Deno.test("decodeView() takes the defaults for what does not parse", () => {
  assertEquals(decodeView(new URLSearchParams("smooth=2&x=sideways&metrics=")), DEFAULT_VIEW);
  assertEquals(decodeView(new URLSearchParams("smooth=abc")).smooth, 0);
  assertEquals(encodeView(DEFAULT_VIEW).toString(), "");
});

Deno.test("xValues() gives steps, seconds since the first point, or wall time in ms", () => {
  const s = { steps: [0, 10, 20], wall_times: [100, 101.5, 103] };
  assertEquals(xValues(s, "step"), [0, 10, 20]);
  assertEquals(xValues(s, "relative"), [0, 1.5, 3]);
  assertEquals(xValues(s, "wall"), [100_000, 101_500, 103_000]);
  assertEquals([formatRelative(9.5), formatRelative(65), formatRelative(3725)], [
    "9.5s",
    "1m 05s",
    "1h 02m 05s",
  ]);
});
