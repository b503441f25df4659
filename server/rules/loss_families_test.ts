import assert from "node:assert/strict";
import { isLossKey, LOSS_FAMILIES, lossFamily } from "./loss_families.ts";

Deno.test("lossFamily() classifies train and eval loss keys, Keras subfolder keys included", () => {
  const cases: [string, "train" | "eval" | null][] = [
    ["train/loss", "train"],
    ["loss", "train"],
    ["train_loss", "train"],
    ["train/epoch_loss", "train"],
    ["eval/loss", "eval"],
    ["val/loss", "eval"],
    ["validation/loss", "eval"],
    ["eval_loss", "eval"],
    ["val_loss", "eval"],
    ["validation/epoch_loss", "eval"],
    ["train/accuracy", null],
    ["validation/epoch_accuracy", null],
    ["train/loss_scale", null],
    ["sys/gpu0/util", null],
  ];
  for (const [key, family] of cases) assert.equal(lossFamily(key), family, key);
});

Deno.test("LOSS_FAMILIES lists every key lossFamily() knows, each in one family", () => {
  const all = [...LOSS_FAMILIES.train, ...LOSS_FAMILIES.eval];
  assert.equal(new Set(all).size, all.length);
  for (const key of LOSS_FAMILIES.train) assert.equal(lossFamily(key), "train");
  for (const key of LOSS_FAMILIES.eval) assert.equal(lossFamily(key), "eval");
});

Deno.test("isLossKey() matches any key containing loss, in any case", () => {
  assert.equal(isLossKey("train/loss"), true);
  assert.equal(isLossKey("aux/LossRecon"), true);
  assert.equal(isLossKey("train/accuracy"), false);
});
