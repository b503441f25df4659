/** `compareCheckpoints`: a run's checkpoints side by side and ranked, and which to evaluate. */
import type { CheckpointComparison, NextAction } from "../../protocol/objects.ts";
import { act, better, fmt } from "./_format.ts";
import { rankCheckpoints, type Ranking, type RankingInput } from "./rank_checkpoints.ts";

/** The suite suggested for a first evaluation when no checkpoint was evaluated yet. */
export const DEFAULT_SUITE = "default";

/**
 * A run's checkpoints side by side: step, training metric at that step, evaluation results,
 * ranked held-out results first (see `rankCheckpoints`).
 */
export function compareCheckpoints(input: RankingInput & { run_id: string }): CheckpointComparison {
  const ranking = rankCheckpoints(input);
  const m = ranking.evaluation_metric;
  const metric = ranking.basis === "evaluation" && m
    ? { key: m.key, direction: m.direction, suite: m.suite }
    : ranking.basis === "training_metric" && input.primary
    ? { ...input.primary, suite: null }
    : null;
  return {
    run_id: input.run_id,
    basis: ranking.basis,
    metric,
    checkpoints: ranking.ranked,
    summary: summaryOf(input, ranking) + excludedText(ranking),
    next_actions: nextActions(input.run_id, ranking),
  };
}

function summaryOf(input: RankingInput & { run_id: string }, r: Ranking): string {
  const n = r.ranked.length;
  if (n === 0) return `Run ${input.run_id} has no checkpoints.`;
  const head = `${n} checkpoint${n === 1 ? "" : "s"} of run ${input.run_id}`;
  const top = r.ranked[0];
  const topText = top.score && !top.excluded
    ? ` Best: ${top.checkpoint_id} (step ${top.step ?? "?"}) with ${top.score.key} = ${
      typeof top.score.value === "number" ? fmt(top.score.value) : top.score.value
    }.`
    : "";
  if (r.basis === "evaluation") {
    const m = r.evaluation_metric!;
    const evaluated = r.ranked.filter((c) => c.score?.basis === "evaluation" && !c.excluded)
      .length;
    const rest = n - evaluated;
    return `${head}: ${evaluated} ranked by held-out "${m.key}" on suite "${m.suite}" ` +
      `(${better(m.direction)})` +
      (rest
        ? `, the other ${rest} after them by the training-time ${
          input.primary ? `"${input.primary.key}"` : "metric"
        }`
        : "") +
      `.${topText}`;
  }
  if (r.basis === "training_metric") {
    return `${head} ranked by the training-time "${input.primary!.key}" at their step ` +
      `(${better(input.primary!.direction)}); none has a held-out evaluation yet.${topText}`;
  }
  return `${head}, but nothing to rank them by: no evaluation results and no primary metric ` +
    "value at their steps.";
}

function excludedText(r: Ranking): string {
  const excluded = r.ranked.filter((c) => c.excluded);
  if (excluded.length === 0) return "";
  return ` Not ranked, never to be used: ${
    excluded.map((c) => `${c.checkpoint_id} (step ${c.step ?? "?"}: ${c.excluded})`).join("; ")
  }.`;
}

function nextActions(runId: string, r: Ranking): NextAction[] {
  const top = r.ranked.find((c) => !c.excluded);
  if (!top) return [act("diagnose_run", { run_id: runId }, "See what the run recorded")];
  if (r.basis === "evaluation") {
    const out = [act(
      "get_best_checkpoint",
      { run_id: runId },
      "Get the recommendation with its reason and alternatives",
    )];
    const tb = r.train_best;
    if (tb && tb.score?.basis !== "evaluation") {
      out.push(act(
        "evaluate_checkpoint",
        { checkpoint_id: tb.checkpoint_id, suite: r.evaluation_metric!.suite },
        `Checkpoint ${tb.checkpoint_id} has the best training metric but no "${
          r.evaluation_metric!.suite
        }" result; evaluate it to rank it on held-out data`,
      ));
    }
    return out;
  }
  return [act(
    "evaluate_checkpoint",
    { checkpoint_id: top.checkpoint_id, suite: r.suites[0] ?? DEFAULT_SUITE },
    "No checkpoint has a held-out result; evaluate " +
      (r.basis === "training_metric" ? "the best one by training metric" : "the newest one") +
      " (name the suite your eval command runs)",
  )];
}
