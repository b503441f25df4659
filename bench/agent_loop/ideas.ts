/**
 * What the loop tries next: from the best kept recipe, a learning-rate change (a config
 * override) or one line of train.py changed (a code edit). Pure and seeded, so a run of the
 * loop can be repeated.
 */
import { CODE_EDITS, type CodeEdit } from "./work_tree.ts";

export { seededRandom } from "../../server/sweeps/expand.ts";

/** What a run trains with: its learning rate and the code edits its train.py carries. */
export interface Recipe {
  lr: number;
  edits: readonly string[];
}

export type Idea =
  | { kind: "config"; lr: number; label: string }
  | { kind: "code"; edit: CodeEdit; label: string };

/** The learning rates of the first runs, before anything is kept (the last ones diverge). */
export const SEED_LRS = [0.01, 0.003, 0.03, 3, 0.001, 0.3];
const FACTORS = [0.3, 0.5, 0.7, 1.4, 2, 3];
/** Every how many ideas one is a code edit (when one is left to try on the best recipe). */
export const CODE_EVERY = 4;

const round = (x: number) => Number(x.toPrecision(2));

/** The key of a recipe, to avoid trying the same one twice. */
export function recipeKey(r: Recipe): string {
  return `${r.lr}|${[...r.edits].sort().join(",")}`;
}

/**
 * Idea number `n` (from 1) on top of `best`, not one of `tried` when another can be found: a
 * code edit every `codeEvery` ideas, else a learning rate.
 */
export function proposeIdea(
  best: Recipe,
  tried: ReadonlySet<string>,
  random: () => number,
  n: number,
  codeEvery = CODE_EVERY,
): Idea {
  const edits = CODE_EDITS.filter((e) =>
    !best.edits.includes(e.label) &&
    !tried.has(recipeKey({ ...best, edits: [...best.edits, e.label] }))
  );
  if (edits.length > 0 && n % codeEvery === 0) {
    const edit = edits[Math.floor(random() * edits.length)];
    return { kind: "code", edit, label: edit.label };
  }
  let lr = best.lr;
  for (let i = 0; i < 20; i++) {
    lr = round(best.lr * FACTORS[Math.floor(random() * FACTORS.length)]);
    if (!tried.has(recipeKey({ ...best, lr }))) break;
  }
  return { kind: "config", lr, label: `lr ${lr}` };
}

/** The recipe an idea gives when applied to `best`. */
export function applyIdea(best: Recipe, idea: Idea): Recipe {
  return idea.kind === "config"
    ? { ...best, lr: idea.lr }
    : { ...best, edits: [...best.edits, idea.edit.label] };
}
