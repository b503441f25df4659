import { assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import { aCheckpoint, anEvaluation } from "./_fixtures.ts";
import { getBestCheckpoint } from "./best_checkpoint.ts";
import type { CheckpointCandidate } from "./rank_checkpoints.ts";

const loss = { key: "train/loss", direction: "min" as const };
const dirs = { accuracy: "max" as const };
const cand = (
  id: string,
  step: number,
  train: number | null,
  evaluations: CheckpointCandidate["evaluations"] = [],
): CheckpointCandidate => ({ checkpoint: aCheckpoint(id, step), train_value: train, evaluations });

Deno.test("getBestCheckpoint() prefers an evaluated checkpoint over a better training-time one", () => {
  const rec = getBestCheckpoint({
    scope: { run_id: "r-1" },
    candidates: [
      cand("c-early", 100, 0.8, [anEvaluation("c-early", "heldout", { accuracy: 0.71 })]),
      cand("c-late", 900, 0.1),
    ],
    primary: loss,
    eval_directions: dirs,
  });
  assertEquals(rec.checkpoint?.checkpoint_id, "c-early");
  assertEquals([rec.basis, rec.metric, rec.direction, rec.suite, rec.value], [
    "evaluation",
    "accuracy",
    "max",
    "heldout",
    0.71,
  ]);
  assertStringIncludes(rec.reason, "Held-out evaluation results are preferred");
  assertStringIncludes(rec.reason, "c-late (run r-1, step 900) would have been chosen");
  assertEquals(rec.considered, { checkpoints: 2, evaluated: 1 });
  assertEquals(rec.alternatives.map((a) => [a.checkpoint_id, a.rank]), [["c-late", 2]]);
  assertEquals(rec.next_actions[0], {
    tool: "evaluate_checkpoint",
    args: { checkpoint_id: "c-late", suite: "heldout" },
    why: 'Its training metric is the best; evaluate it on "heldout" too so it can compete on ' +
      "held-out data",
  });
});

Deno.test("getBestCheckpoint() falls back to the training metric and asks for an evaluation", () => {
  const rec = getBestCheckpoint({
    scope: { experiment: "p/e" },
    candidates: [cand("c1", 100, 0.4), cand("c2", 200, 0.3)],
    primary: loss,
    eval_directions: dirs,
  });
  assertEquals([rec.checkpoint?.checkpoint_id, rec.basis, rec.value], [
    "c2",
    "training_metric",
    0.3,
  ]);
  assertStringIncludes(rec.reason, "No checkpoint of experiment p/e has a held-out evaluation");
  assertEquals(rec.next_actions.map((a) => [a.tool, a.args]), [
    ["evaluate_checkpoint", { checkpoint_id: "c2", suite: "default" }],
    ["compare_checkpoints", { run_id: "r-1" }],
  ]);
});

Deno.test("getBestCheckpoint() without checkpoints says why and chooses nothing", () => {
  const rec = getBestCheckpoint({
    scope: { run_id: "r-1" },
    candidates: [],
    primary: loss,
    eval_directions: dirs,
  });
  assertEquals([rec.checkpoint, rec.basis, rec.value], [null, null, null]);
  assertStringIncludes(rec.reason, "run r-1 has none");
  assertEquals(rec.next_actions.map((a) => a.tool), ["diagnose_run"]);
});

Deno.test("getBestCheckpoint() skips an overwritten checkpoint and one saved after LOSS_NAN, saying why", () => {
  const overwritten: CheckpointCandidate = {
    checkpoint: aCheckpoint("c-100", 100, { overwritten: true, overwritten_by_run: "r-2" }),
    train_value: 0.2,
    evaluations: [anEvaluation("c-100", "heldout", { accuracy: 0.99 })],
  };
  const rec = getBestCheckpoint({
    scope: { run_id: "r-1" },
    candidates: [overwritten, cand("c-200", 200, 0.5), cand("c-300", 300, 0.05)],
    primary: loss,
    eval_directions: dirs,
    loss_nan_steps: { "r-1": 300 },
  });
  assertEquals(rec.checkpoint?.checkpoint_id, "c-200");
  assertEquals(rec.basis, "training_metric");
  assertEquals(rec.alternatives, []);
  assertEquals(rec.skipped.map((s) => s.checkpoint_id).sort(), ["c-100", "c-300"]);
  assertStringIncludes(rec.skipped.find((s) => s.checkpoint_id === "c-100")!.why, "run r-2");
  assertStringIncludes(
    rec.skipped.find((s) => s.checkpoint_id === "c-300")!.why,
    "at or after the run's LOSS_NAN at step 300",
  );
  assertStringIncludes(rec.reason, "overwritten by run r-2");
  assertStringIncludes(rec.summary, "Use c-200 (run r-1, step 200)");
  assertStringIncludes(
    rec.summary,
    "best of the 1 usable of 3 checkpoints of run r-1, 1 evaluated. 2 skipped (after NaN, overwritten).",
  );
});

Deno.test("getBestCheckpoint() recommends nothing when every checkpoint is excluded", () => {
  const rec = getBestCheckpoint({
    scope: { run_id: "r-1" },
    candidates: [cand("c-300", 300, 0.05)],
    primary: loss,
    eval_directions: dirs,
    loss_nan_steps: { "r-1": 250 },
  });
  assertEquals(rec.checkpoint, null);
  assertStringIncludes(rec.reason, "None of the 1 checkpoint of run r-1 can be recommended");
  assertStringIncludes(rec.summary, "No checkpoint to recommend");
});

Deno.test("getBestCheckpoint() never chooses a gone, incomplete or overwritten checkpoint, and says why", () => {
  const state = (
    id: string,
    step: number,
    train: number,
    over: Partial<CheckpointCandidate["checkpoint"]>,
  ) => ({
    checkpoint: aCheckpoint(id, step, over),
    train_value: train,
    evaluations: [],
  });
  const rec = getBestCheckpoint({
    scope: { run_id: "r-1" },
    candidates: [
      cand("c-ok", 100, 0.5),
      state("c-gone", 200, 0.1, { state: "gone", gone_at: "2026-01-03T00:00:00.000Z" }),
      state("c-cut", 300, 0.05, {
        state: "incomplete",
        problem: "no end-of-central-directory record at its end: the zip was cut short",
      }),
      state("c-other", 400, 0.01, {
        state: "overwritten",
        overwritten: true,
        overwritten_by_run: "r-2",
      }),
    ],
    primary: loss,
    eval_directions: dirs,
  });
  assertEquals(rec.checkpoint?.checkpoint_id, "c-ok");
  assertEquals(rec.skipped.map((s) => [s.checkpoint_id, s.why.split(":")[0]]), [
    ["c-other", 'overwritten by run r-2, which saved to the same path "/ckpt/c-other" later'],
    ["c-cut", "incomplete"],
    ["c-gone", "gone"],
  ]);
  assertStringIncludes(rec.skipped[1].why, "the zip was cut short");
  assertStringIncludes(rec.summary, "3 skipped (gone, incomplete, overwritten).");
  assertStringIncludes(rec.reason, "Skipped 3 checkpoints that must not be used");
});
