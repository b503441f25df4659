/**
 * `getBestCheckpoint`: the checkpoint to use of a run or an experiment — evaluation results
 * over the training metric — with the reason, the alternatives and what was skipped.
 */
import type {
  CheckpointRecommendation,
  NextAction,
  RankedCheckpoint,
} from "../../protocol/objects.ts";
import { act, better, fmt } from "./_format.ts";
import { DEFAULT_SUITE } from "./compare_checkpoints.ts";
import {
  rankCheckpoints,
  type Ranking,
  type RankingInput,
  skippedKind,
} from "./rank_checkpoints.ts";

/** How many runner-up checkpoints a recommendation lists. */
export const ALTERNATIVES_SHOWN = 5;

/** What `getBestCheckpoint` chooses among: the checkpoints of a run or of an experiment. */
export interface BestCheckpointInput extends RankingInput {
  scope: { run_id: string } | { experiment: string };
}

const valueText = (v: number | string) => typeof v === "number" ? fmt(v) : v;

const where = (c: RankedCheckpoint) =>
  `${c.checkpoint_id} (run ${c.run_id}, step ${c.step ?? "?"})`;

/**
 * The checkpoint to use and why: held-out evaluation results win over the training-time
 * metric, however good the latter looks; the reason names the metric, the value, the basis and
 * what the training metric alone would have picked.
 */
export function getBestCheckpoint(input: BestCheckpointInput): CheckpointRecommendation {
  const ranking = rankCheckpoints(input);
  const best = ranking.ranked[0]?.rank === 1 ? ranking.ranked[0] : null;
  const evaluated =
    input.candidates.filter((c) => c.evaluations.some((e) => e.status === "COMPLETED")).length;
  const skipped = ranking.ranked.filter((c) => c.excluded !== null).map((c) => ({
    checkpoint_id: c.checkpoint_id,
    run_id: c.run_id,
    step: c.step,
    why: c.excluded!,
  }));
  const reason = reasonOf(input, ranking, best, skipped);
  return {
    scope: input.scope,
    checkpoint: best,
    basis: best ? best.score!.basis : null,
    metric: best ? best.score!.key : null,
    direction: best ? best.score!.direction : null,
    suite: best ? best.score!.suite : null,
    value: best ? best.score!.value : null,
    reason,
    alternatives: ranking.ranked.filter((c) => c !== best && !c.excluded).slice(
      0,
      ALTERNATIVES_SHOWN,
    ).map((
      c,
    ) => ({
      checkpoint_id: c.checkpoint_id,
      run_id: c.run_id,
      step: c.step,
      rank: c.rank,
      score: c.score,
      note: noteOf(c, ranking),
    })),
    considered: { checkpoints: input.candidates.length, evaluated },
    skipped,
    summary: summaryOf(input, best, skipped, evaluated),
    next_actions: nextActions(input, ranking, best),
  };
}

type Skipped = CheckpointRecommendation["skipped"];

/** Shown in full in the reason; the summary counts them. */
const SKIPPED_LISTED = 5;

function skippedText(skipped: Skipped): string {
  if (skipped.length === 0) return "";
  const more = skipped.length - SKIPPED_LISTED;
  return ` Skipped ${skipped.length} checkpoint${skipped.length === 1 ? "" : "s"} that must ` +
    `not be used: ${
      skipped.slice(0, SKIPPED_LISTED).map((c) =>
        `${c.checkpoint_id} (step ${c.step ?? "?"}: ${c.why})`
      ).join("; ")
    }${more > 0 ? ` and ${more} more` : ""}.`;
}

/** One or two sentences: the choice, its basis and value, and what was skipped. */
function summaryOf(
  input: BestCheckpointInput,
  best: RankedCheckpoint | null,
  skipped: Skipped,
  evaluated: number,
): string {
  const n = input.candidates.length;
  const of = `${n} checkpoint${n === 1 ? "" : "s"} of ${scopeText(input.scope)}` +
    (evaluated ? `, ${evaluated} evaluated` : "");
  const skippedNote = skipped.length
    ? ` ${skipped.length} skipped (${
      [
        ...new Set(
          skipped.map((c) => skippedKind(c.why)),
        ),
      ]
        .sort().join(", ")
    }).`
    : "";
  if (!best) {
    return (n === 0
      ? `No checkpoint to recommend: ${scopeText(input.scope)} has none.`
      : `No checkpoint to recommend among ${of}.`) + skippedNote;
  }
  const s = best.score!;
  return `Use ${where(best)}: ${
    s.basis === "evaluation" ? `held-out "${s.key}" on "${s.suite}"` : `training-time "${s.key}"`
  } = ${valueText(s.value)} (${better(s.direction)}), best of ${
    skipped.length ? `the ${n - skipped.length} usable of ` : ""
  }${of}.` + skippedNote;
}

function scopeText(scope: BestCheckpointInput["scope"]): string {
  return "run_id" in scope ? `run ${scope.run_id}` : `experiment ${scope.experiment}`;
}

function reasonOf(
  input: BestCheckpointInput,
  r: Ranking,
  best: RankedCheckpoint | null,
  skipped: Skipped,
): string {
  return choiceOf(input, r, best, skipped.length) + skippedText(skipped);
}

function choiceOf(
  input: BestCheckpointInput,
  r: Ranking,
  best: RankedCheckpoint | null,
  skippedCount: number,
): string {
  const n = input.candidates.length;
  if (n === 0) return `No checkpoint to choose from: ${scopeText(input.scope)} has none.`;
  if (!best && skippedCount === n) {
    return `None of the ${n} checkpoint${n === 1 ? "" : "s"} of ${scopeText(input.scope)} ` +
      "can be recommended.";
  }
  if (!best) {
    return `None of the ${n} checkpoints of ${scopeText(input.scope)} can be ranked: no ` +
      "evaluation results and no finite value of a primary metric at their steps.";
  }
  const s = best.score!;
  if (s.basis === "evaluation") {
    const rivals = r.ranked.filter((c) => c.score?.basis === "evaluation" && !c.excluded).length;
    let text = `Checkpoint ${where(best)} has the best held-out "${s.key}" on suite ` +
      `"${s.suite}": ${valueText(s.value)} (${better(s.direction)}), among ${rivals} ` +
      `evaluated checkpoint${rivals === 1 ? "" : "s"} of ${n}. Held-out evaluation results ` +
      "are preferred over the training-time metric";
    const tb = r.train_best;
    if (tb && tb !== best && input.primary) {
      text += `; by the training-time "${input.primary.key}" alone, ${where(tb)} would have ` +
        `been chosen (${valueText(tb.train_metric!.value)} against ${
          best.train_metric ? valueText(best.train_metric.value) : "n/a"
        })` + (tb.score?.basis === "evaluation" ? ", but it evaluates worse" : ", but it has no " +
          `"${s.suite}" result`);
    }
    return text + ".";
  }
  return `No checkpoint of ${scopeText(input.scope)} has a held-out evaluation yet, so ` +
    `${where(best)} is chosen by the training-time primary metric "${s.key}" at its step: ` +
    `${valueText(s.value)} (${better(s.direction)}), the best of ${n}. Evaluate it to confirm ` +
    "on held-out data.";
}

function noteOf(c: RankedCheckpoint, r: Ranking): string {
  if (!c.score) return "nothing to rank it by";
  if (typeof c.score.value !== "number") return `its ${c.score.key} is ${c.score.value}`;
  if (c.score.basis === "training_metric" && r.basis === "evaluation") {
    return "no held-out result on the chosen suite: ranked after the evaluated checkpoints";
  }
  return `${c.score.basis === "evaluation" ? "held-out" : "training-time"} ${c.score.key} ` +
    valueText(c.score.value);
}

function nextActions(
  input: BestCheckpointInput,
  r: Ranking,
  best: RankedCheckpoint | null,
): NextAction[] {
  const runScope = "run_id" in input.scope ? input.scope.run_id : null;
  if (!best) {
    return runScope
      ? [act("diagnose_run", { run_id: runScope }, "See what the run recorded and why")]
      : [];
  }
  const out: NextAction[] = [];
  if (best.score!.basis === "training_metric") {
    out.push(act(
      "evaluate_checkpoint",
      { checkpoint_id: best.checkpoint_id, suite: r.suites[0] ?? DEFAULT_SUITE },
      "Confirm the choice on held-out data (name the suite your eval command runs); the " +
        "recommendation then rests on the evaluation",
    ));
  } else if (r.train_best && r.train_best.score?.basis !== "evaluation") {
    out.push(act(
      "evaluate_checkpoint",
      { checkpoint_id: r.train_best.checkpoint_id, suite: best.score!.suite },
      `Its training metric is the best; evaluate it on "${best.score!.suite}" too so it can ` +
        "compete on held-out data",
    ));
  }
  out.push(act(
    "compare_checkpoints",
    { run_id: best.run_id },
    `See every checkpoint of run ${best.run_id} ranked`,
  ));
  return out;
}
