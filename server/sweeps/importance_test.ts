import { assertEquals } from "../../tests/assert.ts";
import { parameterImportance, spearman } from "./importance.ts";

Deno.test("spearman() is 1 for any increasing relation, -1 for a decreasing one", () => {
  assertEquals(spearman([1, 2, 3, 4], [1, 4, 9, 16]), 1);
  assertEquals(spearman([1, 2, 3, 4], [10, 5, 2, 1]), -1);
  assertEquals(spearman([1, 2], [1, 2]), null);
  assertEquals(spearman([1, 1, 1], [1, 2, 3]), null);
});

Deno.test("spearman() averages tied ranks", () => {
  // Hand-computed: ranks x = [1.5, 1.5, 3, 4], y = [1, 2, 3, 4] → r = 0.949.
  assertEquals(spearman([1, 1, 2, 3], [1, 2, 3, 4]), 0.949);
});

Deno.test("parameterImportance() ranks the parameter that moves the metric first", () => {
  const trials = [
    { params: { lr: 0.1, seed: 1 }, final: 0.2 },
    { params: { lr: 0.01, seed: 2 }, final: 0.5 },
    { params: { lr: 0.001, seed: 3 }, final: 0.9 },
    { params: { lr: 0.05, seed: 4 }, final: 0.3 },
    { params: { lr: 0.5, seed: 5 }, final: NaN },
  ];
  const out = parameterImportance(trials, ["seed", "lr"]);
  assertEquals(out.map((p) => p.parameter), ["lr", "seed"]);
  assertEquals(out[0], { parameter: "lr", correlation: -1, trials: 4 });
});

Deno.test("parameterImportance() ranks strings by their order of appearance", () => {
  const trials = [
    { params: { opt: "adam" }, final: 0.1 },
    { params: { opt: "sgd" }, final: 0.5 },
    { params: { opt: "adam" }, final: 0.2 },
    { params: { opt: "sgd" }, final: 0.6 },
  ];
  assertEquals(parameterImportance(trials, ["opt"])[0].correlation! > 0.8, true);
});
