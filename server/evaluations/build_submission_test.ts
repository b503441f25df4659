import { assertEquals, assertThrows } from "../../tests/assert.ts";
import type { Job } from "../../protocol/objects.ts";
import { buildEvaluationSubmission, type EvaluationFacts } from "./build_submission.ts";
import type { ValidationError } from "../errors.ts";

const job = {
  id: "j-1",
  name: "train",
  kind: "TRAIN",
  project: "nlp",
  experiment: "base",
  command: ["python", "train.py"],
  shell: false,
  working_dir: "/work/exp/",
  env: { HF_HOME: "/cache", GPUCTL_CHECKPOINT_ID: "stale" },
  secret_env: [],
  gpus: 2,
  priority: 5,
  max_attempts: 3,
  node: null,
  tensorboard_dir: "/tb",
  checkpoint_dir: "/ckpt",
  runner: "docker",
  image: "pytorch:2",
} as unknown as Job;

function facts(over: Partial<EvaluationFacts> = {}): EvaluationFacts {
  return {
    evaluation_id: "ev-1",
    checkpoint: {
      id: "c-1",
      run_id: "r-1",
      step: 900,
      epoch: null,
      path: "/ckpt/step-900",
      size_bytes: null,
      mtime: null,
      metrics: {},
      created_at: "2026-01-01T00:00:00.000Z",
      overwritten: false,
      overwritten_by_run: null,
      state: "valid",
      problem: null,
      gone_at: null,
      fingerprint: null,
    },
    run: { id: "r-1", name: "bert", project: "nlp", experiment: "base", node_id: "gpu-1" },
    training_job: job,
    eval_command: "python eval.py",
    request: { suite: "heldout" },
    ...over,
  };
}

Deno.test("buildEvaluationSubmission() inherits the training job and sets the evaluation env", () => {
  assertEquals(buildEvaluationSubmission(facts()), {
    name: "eval heldout: bert @ step 900",
    command: "python eval.py",
    shell: true,
    working_dir: "/work/exp/",
    gpus: 2,
    env: {
      HF_HOME: "/cache",
      GPUCTL_CHECKPOINT_ID: "c-1",
      GPUCTL_CHECKPOINT_PATH: "/ckpt/step-900",
      GPUCTL_EVALUATION_ID: "ev-1",
      GPUCTL_EVAL_SUITE: "heldout",
      GPUCTL_EVAL_OUTPUT: "/work/exp/.gpuctl/eval-ev-1.json",
    },
    project: "nlp",
    experiment: "base",
    runner: "docker",
    image: "pytorch:2",
    node: "gpu-1",
    priority: 5,
  });
});

Deno.test("buildEvaluationSubmission() lets the request override command, dir, GPUs and node", () => {
  const s = buildEvaluationSubmission(facts({
    request: {
      suite: "s",
      command: ["python", "ev.py"],
      working_dir: "/other",
      gpus: 0,
      node: "gpu-2",
    },
  }));
  assertEquals([s.command, s.shell, s.working_dir, s.gpus, s.node], [
    ["python", "ev.py"],
    false,
    "/other",
    0,
    "gpu-2",
  ]);
  assertEquals(s.env!.GPUCTL_EVAL_OUTPUT, "/other/.gpuctl/eval-ev-1.json");
});

Deno.test("buildEvaluationSubmission() needs a command and, without a job, a working_dir", () => {
  const table: [string, Partial<EvaluationFacts>, string][] = [
    ["no command anywhere", { eval_command: null }, "command: is required"],
    [
      "an SDK run without working_dir",
      {
        training_job: null,
        run: { id: "r-1", name: "b", project: "p", experiment: null, node_id: null },
      },
      "working_dir: is required",
    ],
  ];
  for (const [name, over, message] of table) {
    const err = assertThrows(() => buildEvaluationSubmission(facts(over)), message);
    assertEquals((err as ValidationError).kind, "validation", name);
  }
});

Deno.test("buildEvaluationSubmission() of an SDK run uses the request's dir, no GPU by default", () => {
  const s = buildEvaluationSubmission(facts({
    training_job: null,
    run: { id: "r-1", name: "b", project: "p", experiment: null, node_id: null },
    request: { suite: "s", command: "python ev.py", working_dir: "/w" },
  }));
  assertEquals([s.gpus, s.runner, s.node, s.experiment, s.working_dir], [
    0,
    "process",
    undefined,
    undefined,
    "/w",
  ]);
});
