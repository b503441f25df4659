import { assertEquals } from "../../tests/assert.ts";
import { configDiff, flattenConfig } from "./config_diff.ts";

Deno.test("flattenConfig() joins nested keys with dots and keeps arrays whole", () => {
  assertEquals(
    [...flattenConfig({
      lr: 0.1,
      model: { layers: 4, act: { name: "gelu" } },
      sizes: [1, 2],
      x: {},
    })],
    [["lr", 0.1], ["model.layers", 4], ["model.act.name", "gelu"], ["sizes", [1, 2]], ["x", {}]],
  );
});

Deno.test("configDiff() lists only differing keys, null where a run lacks one", () => {
  const { diff, identical } = configDiff([
    { run_id: "a", config: { lr: 0.1, model: { layers: 4, d: 512 }, seed: 1 } },
    { run_id: "b", config: { lr: 0.01, model: { layers: 4, d: 512 }, seed: 1, warmup: 100 } },
  ]);
  assertEquals(diff, [
    { key: "lr", values: { a: 0.1, b: 0.01 } },
    { key: "warmup", values: { a: null, b: 100 } },
  ]);
  assertEquals(identical, 3);
});

Deno.test("configDiff() of identical configs is empty", () => {
  const same = { lr: 0.1, tags: ["x"] };
  assertEquals(configDiff([{ run_id: "a", config: same }, { run_id: "b", config: same }]), {
    diff: [],
    identical: 2,
  });
});
