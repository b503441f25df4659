import { deepStrictEqual, strictEqual } from "node:assert/strict";
import { fixturePath } from "./_fixtures.ts";
import { mergeScalars, readEventDir } from "./read_event_dir.ts";

Deno.test("mergeScalars() keeps the last write per (tag, step), sorted by tag then step", () => {
  const p = (tag: string, step: number, value: number) => ({ tag, step, value, wall_time: value });
  deepStrictEqual(
    mergeScalars([p("b", 2, 1), p("a", 10, 2), p("b", 1, 3), p("a", 2, 4), p("b", 2, 5)]),
    [
      p("a", 2, 4),
      p("a", 10, 2),
      p("b", 1, 3),
      p("b", 2, 5),
    ],
  );
  deepStrictEqual(mergeScalars([]), []);
});

Deno.test("readEventDir() of the whole fixture folder gives 160 points, prefixed by run and folder", async () => {
  const points = await readEventDir(fixturePath());
  strictEqual(points.length, 160);
  const byTag = new Map<string, number>();
  for (const p of points) byTag.set(p.tag, (byTag.get(p.tag) ?? 0) + 1);
  deepStrictEqual(Object.fromEntries([...byTag].sort()), {
    "keras-exp0/train/epoch_accuracy": 10,
    "keras-exp0/train/epoch_loss": 10,
    "keras-exp0/validation/epoch_accuracy": 10,
    "keras-exp0/validation/epoch_loss": 10,
    "keras-exp0/validation/evaluation_accuracy_vs_iterations": 10,
    "keras-exp0/validation/evaluation_loss_vs_iterations": 10,
    "torch-logs/y=x": 100,
  });
  for (const p of points.filter((p) => p.tag === "torch-logs/y=x")) {
    strictEqual(p.value, 2 * p.step);
  }
});

Deno.test("readEventDir() of a run folder shows the overfitting the fixtures README describes", async () => {
  const points = await readEventDir(fixturePath("keras-exp0"));
  const validationLoss = points.filter((p) => p.tag === "validation/epoch_loss");
  const best = validationLoss.reduce((a, b) => (b.value < a.value ? b : a));
  strictEqual(best.step, 6);
  strictEqual(Math.round(best.value * 1e5) / 1e5, 0.07555);
});
