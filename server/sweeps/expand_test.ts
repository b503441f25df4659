import { assertEquals } from "../../tests/assert.ts";
import { expandTrials, seededRandom } from "./expand.ts";

Deno.test("expandTrials() makes the grid's cartesian product in parameter order", () => {
  assertEquals(
    expandTrials({ lr: { values: [0.1, 0.01] }, seed: { values: [1, 2, 3] } }, "grid"),
    {
      trials: [
        { lr: 0.1, seed: 1 },
        { lr: 0.1, seed: 2 },
        { lr: 0.1, seed: 3 },
        { lr: 0.01, seed: 1 },
        { lr: 0.01, seed: 2 },
        { lr: 0.01, seed: 3 },
      ],
    },
  );
});

Deno.test("expandTrials() spaces a log range evenly in log space, ends included", () => {
  assertEquals(expandTrials({ lr: { min: 1e-4, max: 1e-2, scale: "log", count: 3 } }, "grid"), {
    trials: [{ lr: 0.0001 }, { lr: 0.001 }, { lr: 0.01 }],
  });
  assertEquals(expandTrials({ bs: { min: 16, max: 64, count: 3 } }, "grid"), {
    trials: [{ bs: 16 }, { bs: 40 }, { bs: 64 }],
  });
  assertEquals(expandTrials({ layers: { distribution: "int", min: 2, max: 4 } }, "grid"), {
    trials: [{ layers: 2 }, { layers: 3 }, { layers: 4 }],
  });
});

Deno.test("expandTrials() names the field a grid cannot be made of", () => {
  assertEquals(expandTrials({ lr: { min: 0.1, max: 1 } }, "grid"), {
    field: "parameters.lr.count",
    problem: "is required for a grid over a range",
  });
  const r = expandTrials({ lr: { distribution: "log_uniform", min: 0.1, max: 1 } }, "grid");
  assertEquals("field" in r && r.field, "parameters.lr");
  const big = expandTrials(
    { a: { min: 0, max: 1, count: 100 }, b: { min: 0, max: 1, count: 100 } },
    "grid",
  );
  assertEquals("field" in big && big.field, "parameters");
});

Deno.test("expandTrials() samples a random sweep within bounds, the same for the same seed", () => {
  const params = {
    lr: { distribution: "log_uniform" as const, min: 1e-4, max: 1e-1 },
    layers: { distribution: "int" as const, min: 2, max: 4 },
    opt: { values: ["adam", "sgd"] },
  };
  const a = expandTrials(params, "random", { runs: 50, seed: 7 });
  const b = expandTrials(params, "random", { runs: 50, seed: 7 });
  assertEquals(a, b);
  if (!("trials" in a)) throw new Error("no trials");
  assertEquals(a.trials.length, 50);
  for (const t of a.trials) {
    const lr = t.lr as number;
    assertEquals(lr >= 1e-4 && lr <= 1e-1, true, String(lr));
    assertEquals([2, 3, 4].includes(t.layers as number), true);
    assertEquals(["adam", "sgd"].includes(t.opt as string), true);
  }
  // Both ends of the log range are reached in 50 draws: log-uniform, not uniform.
  assertEquals(a.trials.some((t) => (t.lr as number) < 1e-3), true);
  const c = expandTrials(params, "random", { runs: 50, seed: 8 });
  assertEquals(JSON.stringify(a) === JSON.stringify(c), false);
});

Deno.test("seededRandom() is uniform enough to split draws about evenly", () => {
  const rnd = seededRandom(1);
  let low = 0;
  for (let i = 0; i < 10_000; i++) if (rnd() < 0.5) low++;
  assertEquals(Math.abs(low - 5000) < 300, true, String(low));
});
