/**
 * `rankCheckpoints`: held-out evaluations first, then the training metric at each step, then
 * the unranked; and `exclusionOf`, why a checkpoint must never be handed back.
 */
import type { MetricDirection } from "../../protocol/vocabulary.ts";
import type {
  Checkpoint,
  CheckpointScore,
  Evaluation,
  RankedCheckpoint,
} from "../../protocol/objects.ts";
import { chooseEvaluationKey, metricNumber } from "../evaluations/mod.ts";
import { isBetter, jsonMetric } from "./_format.ts";

/** One checkpoint to rank, with what is known about it. */
export interface CheckpointCandidate {
  checkpoint: Checkpoint;
  /** The run's primary metric at the checkpoint's step (training time); null when unknown. */
  train_value: number | null;
  evaluations: Evaluation[];
}

/** What `rankCheckpoints` ranks and by which metrics. */
export interface RankingInput {
  candidates: CheckpointCandidate[];
  /** The primary metric of the run (or experiment) the checkpoints belong to. */
  primary: { key: string; direction: MetricDirection } | null;
  /** Directions of evaluation result keys that have one (definitions, then the name). */
  eval_directions: Readonly<Record<string, MetricDirection>>;
  /** Per run, the step of its first LOSS_NAN event: checkpoints from then on are excluded. */
  loss_nan_steps?: Readonly<Record<string, number>>;
}

/** Checkpoints ranked, and by what. */
export interface Ranking {
  basis: "evaluation" | "training_metric" | "none";
  /** The suite and key held-out results are ranked by, when any. */
  evaluation_metric: { suite: string; key: string; direction: MetricDirection } | null;
  /** Best first: evaluated, then by training metric, then unranked (newest step first). */
  ranked: RankedCheckpoint[];
  /** The checkpoint the training metric alone would pick. */
  train_best: RankedCheckpoint | null;
  /** Suites of completed evaluations, most used first. */
  suites: string[];
}

/**
 * Why a checkpoint must not be handed back as its run's: its file now holds another run's
 * weights, no longer exists, is not a complete file, or was saved at or after its run's loss
 * went NaN. Null when it may be used. Each reason starts with the word `skippedKind` reads.
 */
export function exclusionOf(
  c: Checkpoint,
  lossNanSteps: Readonly<Record<string, number>> = {},
): string | null {
  if (c.overwritten) {
    return `overwritten by run ${c.overwritten_by_run}, which saved to the same path ` +
      `"${c.path}" later: the file holds that run's weights now`;
  }
  if (c.state === "gone") {
    return `gone: "${c.path}" no longer exists (deleted${
      c.gone_at ? ` by ${c.gone_at}` : ""
    }, as a framework that keeps only its best checkpoints does)`;
  }
  if (c.state === "incomplete") {
    return `incomplete: "${c.path}" ${c.problem ?? "is not a complete file"}; it cannot be loaded`;
  }
  const nanStep = lossNanSteps[c.run_id];
  if (nanStep !== undefined && c.step !== null && c.step >= nanStep) {
    return `saved at step ${c.step}, at or after the run's LOSS_NAN at step ${nanStep}: ` +
      "its weights are likely NaN";
  }
  return null;
}

/** The kind of an `exclusionOf` reason: `overwritten`, `gone`, `incomplete` or `after NaN`. */
export function skippedKind(why: string): string {
  const word = why.split(/[: ]/, 1)[0];
  return ["overwritten", "gone", "incomplete"].includes(word) ? word : "after NaN";
}

/**
 * Ranks checkpoints, held-out evaluations first: the suite that evaluated the most checkpoints,
 * by its key that fits the primary metric best (`chooseEvaluationKey`); the checkpoints it did
 * not evaluate follow, by the training-time primary metric at their step; checkpoints with
 * neither (or with a NaN) come next, unranked; excluded ones (`exclusionOf`) last, unranked.
 */
export function rankCheckpoints(input: RankingInput): Ranking {
  const usable = input.candidates.filter((c) => !exclusionOf(c.checkpoint, input.loss_nan_steps));
  const suites = suitesByUse(usable);
  const evalMetric = evaluationMetric({ ...input, candidates: usable }, suites);
  const rows = input.candidates.map((c) =>
    row(c, input.primary, evalMetric, exclusionOf(c.checkpoint, input.loss_nan_steps))
  );
  const tier = (r: RankedCheckpoint) => {
    if (r.excluded) return 3;
    if (!r.score || typeof r.score.value !== "number") return 2;
    return r.score.basis === "evaluation" ? 0 : 1;
  };
  rows.sort((a, b) => {
    const ta = tier(a);
    const tb = tier(b);
    if (ta !== tb) return ta - tb;
    if (ta < 2) {
      const va = a.score!.value as number;
      const vb = b.score!.value as number;
      if (va !== vb) return isBetter(va, vb, a.score!.direction) ? -1 : 1;
    }
    return (b.step ?? -1) - (a.step ?? -1);
  });
  rows.forEach((r, i) => r.rank = tier(r) < 2 ? i + 1 : null);
  const tiers = new Set(rows.map(tier));
  return {
    basis: tiers.has(0) ? "evaluation" : tiers.has(1) ? "training_metric" : "none",
    evaluation_metric: evalMetric,
    ranked: rows,
    train_best: trainBest(rows, input.primary),
    suites,
  };
}

const completed = (e: Evaluation) => e.status === "COMPLETED";

/** Suites with completed evaluations: most checkpoints first, then the most recent. */
function suitesByUse(candidates: CheckpointCandidate[]): string[] {
  const use = new Map<string, { checkpoints: Set<string>; last: string }>();
  for (const c of candidates) {
    for (const e of c.evaluations.filter(completed)) {
      const u = use.get(e.suite) ?? { checkpoints: new Set(), last: "" };
      u.checkpoints.add(c.checkpoint.id);
      const at = e.finished_at ?? e.created_at;
      if (at > u.last) u.last = at;
      use.set(e.suite, u);
    }
  }
  return [...use.entries()]
    .sort(([, a], [, b]) =>
      b.checkpoints.size - a.checkpoints.size || (a.last < b.last ? 1 : a.last > b.last ? -1 : 0)
    )
    .map(([suite]) => suite);
}

/** The newest completed evaluation of a checkpoint with a suite. */
function latestOf(c: CheckpointCandidate, suite: string): Evaluation | undefined {
  return c.evaluations.filter((e) => completed(e) && e.suite === suite).at(-1);
}

function evaluationMetric(input: RankingInput, suites: string[]): Ranking["evaluation_metric"] {
  for (const suite of suites) {
    const results = input.candidates.flatMap((c) => {
      const e = latestOf(c, suite);
      return e ? [e.metrics] : [];
    });
    const chosen = chooseEvaluationKey(
      results,
      input.primary?.key ?? null,
      input.eval_directions,
    );
    if (chosen) return { suite, ...chosen };
  }
  return null;
}

function row(
  c: CheckpointCandidate,
  primary: RankingInput["primary"],
  evalMetric: Ranking["evaluation_metric"],
  excluded: string | null,
): RankedCheckpoint {
  const train = primary && c.train_value !== null
    ? { key: primary.key, value: jsonMetric(c.train_value) }
    : null;
  let score: CheckpointScore | null = null;
  const evaluated = evalMetric ? latestOf(c, evalMetric.suite) : undefined;
  const evalValue = evaluated ? metricNumber(evaluated.metrics[evalMetric!.key]) : null;
  if (evalMetric && evalValue !== null) {
    score = {
      basis: "evaluation",
      key: evalMetric.key,
      direction: evalMetric.direction,
      suite: evalMetric.suite,
      value: jsonMetric(evalValue),
    };
  } else if (primary && c.train_value !== null) {
    score = {
      basis: "training_metric",
      key: primary.key,
      direction: primary.direction,
      suite: null,
      value: jsonMetric(c.train_value),
    };
  }
  return {
    checkpoint_id: c.checkpoint.id,
    run_id: c.checkpoint.run_id,
    step: c.checkpoint.step,
    epoch: c.checkpoint.epoch,
    path: c.checkpoint.path,
    created_at: c.checkpoint.created_at,
    train_metric: train,
    evaluations: c.evaluations,
    score,
    rank: null,
    excluded,
  };
}

function trainBest(
  rows: RankedCheckpoint[],
  primary: RankingInput["primary"],
): RankedCheckpoint | null {
  if (!primary) return null;
  let best: RankedCheckpoint | null = null;
  for (const r of rows) {
    if (r.excluded) continue;
    const v = r.train_metric?.value;
    if (typeof v !== "number") continue;
    const bv = best?.train_metric?.value as number | undefined;
    if (bv === undefined || isBetter(v, bv, primary.direction)) best = r;
  }
  return best;
}
