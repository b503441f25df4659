import { assertEquals } from "../../tests/assert.ts";
import { aCheckpoint, anEvaluation } from "./_fixtures.ts";
import {
  type CheckpointCandidate,
  rankCheckpoints,
  type RankingInput,
} from "./rank_checkpoints.ts";

const loss = { key: "train/loss", direction: "min" as const };
const dirs = { accuracy: "max" as const, loss: "min" as const };

const cand = (
  id: string,
  step: number,
  train: number | null,
  evaluations: CheckpointCandidate["evaluations"] = [],
): CheckpointCandidate => ({ checkpoint: aCheckpoint(id, step), train_value: train, evaluations });

function order(input: RankingInput) {
  const r = rankCheckpoints(input);
  return { basis: r.basis, ids: r.ranked.map((c) => [c.checkpoint_id, c.rank]) };
}

Deno.test("rankCheckpoints() ranks by the training metric when nothing was evaluated", () => {
  assertEquals(
    order({
      candidates: [cand("c1", 100, 0.5), cand("c2", 200, 0.2), cand("c3", 300, NaN)],
      primary: loss,
      eval_directions: dirs,
    }),
    { basis: "training_metric", ids: [["c2", 1], ["c1", 2], ["c3", null]] },
  );
});

Deno.test("rankCheckpoints() puts evaluated checkpoints first, whatever their training metric", () => {
  const r = rankCheckpoints({
    candidates: [
      cand("c1", 100, 0.9, [anEvaluation("c1", "heldout", { accuracy: 0.7 })]),
      cand("c2", 200, 0.1),
      cand("c3", 300, 0.5, [anEvaluation("c3", "heldout", { accuracy: 0.8 })]),
    ],
    primary: loss,
    eval_directions: dirs,
  });
  assertEquals(r.basis, "evaluation");
  assertEquals(r.evaluation_metric, { suite: "heldout", key: "accuracy", direction: "max" });
  assertEquals(r.ranked.map((c) => [c.checkpoint_id, c.rank, c.score?.basis]), [
    ["c3", 1, "evaluation"],
    ["c1", 2, "evaluation"],
    ["c2", 3, "training_metric"],
  ]);
  assertEquals(r.train_best?.checkpoint_id, "c2");
});

Deno.test("rankCheckpoints() uses the suite that evaluated the most checkpoints", () => {
  const r = rankCheckpoints({
    candidates: [
      cand("c1", 100, 0.5, [
        anEvaluation("c1", "small", { loss: 0.1 }),
        anEvaluation("c1", "big", { accuracy: 0.6 }),
      ]),
      cand("c2", 200, 0.4, [anEvaluation("c2", "big", { accuracy: 0.65 })]),
    ],
    primary: loss,
    eval_directions: dirs,
  });
  assertEquals(r.evaluation_metric?.suite, "big");
  assertEquals(r.suites, ["big", "small"]);
  assertEquals(r.ranked[0].checkpoint_id, "c2");
});

Deno.test("rankCheckpoints() prefers the evaluation key that matches the primary metric", () => {
  const r = rankCheckpoints({
    candidates: [
      cand("c1", 100, 0.5, [anEvaluation("c1", "s", { accuracy: 0.9, loss: 0.4 })]),
      cand("c2", 200, 0.4, [anEvaluation("c2", "s", { accuracy: 0.8, loss: 0.3 })]),
    ],
    primary: { key: "eval/loss", direction: "min" },
    eval_directions: dirs,
  });
  assertEquals(r.evaluation_metric, { suite: "s", key: "loss", direction: "min" });
  assertEquals(r.ranked.map((c) => c.checkpoint_id), ["c2", "c1"]);
});

Deno.test("rankCheckpoints() ignores queued and failed evaluations and results with no direction", () => {
  assertEquals(
    order({
      candidates: [
        cand("c1", 100, 0.5, [anEvaluation("c1", "s", {}, { status: "QUEUED" })]),
        cand("c2", 200, 0.6, [anEvaluation("c2", "s", { tokens: 5 })]),
      ],
      primary: loss,
      eval_directions: dirs,
    }),
    { basis: "training_metric", ids: [["c1", 1], ["c2", 2]] },
  );
});

Deno.test("rankCheckpoints() with no metric at all leaves everything unranked, newest first", () => {
  assertEquals(
    order({
      candidates: [cand("c1", 100, null), cand("c2", 200, null)],
      primary: null,
      eval_directions: {},
    }),
    { basis: "none", ids: [["c2", null], ["c1", null]] },
  );
});
