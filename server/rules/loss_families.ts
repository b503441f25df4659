/** Which side of training a loss key measures. */
export type LossFamily = "train" | "eval";

/**
 * Keys that name a train or an evaluation loss. TensorBoard Keras runs put training and
 * validation into `train/` and `validation/` subfolders, which become key prefixes.
 */
export const LOSS_FAMILIES: Readonly<Record<LossFamily, readonly string[]>> = Object.freeze({
  train: Object.freeze(["train/loss", "loss", "train_loss", "train/epoch_loss"]),
  eval: Object.freeze([
    "eval/loss",
    "val/loss",
    "validation/loss",
    "eval_loss",
    "val_loss",
    "validation/epoch_loss",
  ]),
});

const FAMILY_OF: ReadonlyMap<string, LossFamily> = new Map(
  (Object.keys(LOSS_FAMILIES) as LossFamily[]).flatMap((family) =>
    LOSS_FAMILIES[family].map((key) => [key, family] as const)
  ),
);

/** `"train"` or `"eval"` for a key of the loss families table, else `null`. */
export function lossFamily(key: string): LossFamily | null {
  return FAMILY_OF.get(key) ?? null;
}

/** The position of a train key in the table, so several train keys are tried in a fixed order. */
export function trainKeyRank(key: string): number {
  const rank = LOSS_FAMILIES.train.indexOf(key);
  return rank === -1 ? LOSS_FAMILIES.train.length : rank;
}

/** Whether a key holds a loss at all (its name contains "loss"): the NaN and spike rules. */
export function isLossKey(key: string): boolean {
  return key.toLowerCase().includes("loss");
}
