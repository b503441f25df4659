import { assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import { aCheckpoint, anEvaluation } from "./_fixtures.ts";
import { compareCheckpoints } from "./compare_checkpoints.ts";

const loss = { key: "train/loss", direction: "min" as const };

Deno.test("compareCheckpoints() explains a mixed ranking and asks to evaluate the train-best", () => {
  const c = compareCheckpoints({
    run_id: "r-1",
    candidates: [
      {
        checkpoint: aCheckpoint("c1", 100),
        train_value: 0.9,
        evaluations: [anEvaluation("c1", "heldout", { accuracy: 0.7 })],
      },
      { checkpoint: aCheckpoint("c2", 200), train_value: 0.2, evaluations: [] },
    ],
    primary: loss,
    eval_directions: { accuracy: "max" },
  });
  assertEquals([c.basis, c.metric], ["evaluation", {
    key: "accuracy",
    direction: "max",
    suite: "heldout",
  }]);
  assertStringIncludes(c.summary, '1 ranked by held-out "accuracy" on suite "heldout"');
  assertStringIncludes(c.summary, 'the other 1 after them by the training-time "train/loss"');
  assertEquals(c.next_actions.map((a) => [a.tool, a.args]), [
    ["get_best_checkpoint", { run_id: "r-1" }],
    ["evaluate_checkpoint", { checkpoint_id: "c2", suite: "heldout" }],
  ]);
});

Deno.test("compareCheckpoints() of a run without checkpoints points to its diagnosis", () => {
  const c = compareCheckpoints({
    run_id: "r-1",
    candidates: [],
    primary: loss,
    eval_directions: {},
  });
  assertEquals([c.basis, c.checkpoints, c.summary], ["none", [], "Run r-1 has no checkpoints."]);
  assertEquals(c.next_actions.map((a) => a.tool), ["diagnose_run"]);
});
