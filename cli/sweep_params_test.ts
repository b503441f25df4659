import { assertEquals, assertThrows } from "../tests/assert.ts";
import { parseSweepParam, parseSweepParams } from "./sweep_params.ts";

Deno.test("parseSweepParam() reads ranges with a scale and a count, and integer ranges", () => {
  assertEquals(parseSweepParam("lr=1e-4:1e-2:log:5"), [
    "lr",
    { min: 1e-4, max: 1e-2, scale: "log", count: 5 },
  ]);
  assertEquals(parseSweepParam("wd=0:0.1"), ["wd", { min: 0, max: 0.1, scale: "linear" }]);
  assertEquals(parseSweepParam("layers=2:8:int"), ["layers", {
    distribution: "int",
    min: 2,
    max: 8,
  }]);
});

Deno.test("parseSweepParam() reads listed values as numbers, booleans or text", () => {
  assertEquals(parseSweepParam("seed=1,2,3"), ["seed", { values: [1, 2, 3] }]);
  assertEquals(parseSweepParam("opt=adam,sgd"), ["opt", { values: ["adam", "sgd"] }]);
  assertEquals(parseSweepParam("amp=true,false"), ["amp", { values: [true, false] }]);
  assertEquals(parseSweepParam("model=resnet50"), ["model", { values: ["resnet50"] }]);
});

Deno.test("parseSweepParam() says what is wrong with a flag", () => {
  assertThrows(() => parseSweepParam("lr"), "expected NAME=SPEC");
  assertThrows(() => parseSweepParam("lr="), "no values");
  assertThrows(() => parseSweepParam("lr=a:b"), "a range is MIN:MAX");
  assertThrows(() => parseSweepParam("lr=1:2:cubic"), '"cubic" is neither a scale');
  assertThrows(() => parseSweepParams(["lr=1,2", "lr=3,4"]), "given twice");
});
