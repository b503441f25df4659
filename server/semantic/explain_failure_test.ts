import { assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import { aCheckpoint } from "./_fixtures.ts";
import { explainFailure, type ExplainFailureInput } from "./explain_failure.ts";

const OOM_LOG = [
  "step 120 loss 2.31",
  "Traceback (most recent call last):",
  '  File "train.py", line 88, in <module>',
  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total capacity)",
];

function input(over: Partial<ExplainFailureInput> = {}): ExplainFailureInput {
  return {
    run: { id: "r-1", name: "bert", status: "FAILED", job_id: "j-1", attempt: 1 },
    job: { id: "j-1", status: "FAILED", attempt: 1 },
    failure: {
      status: "FAILED",
      exit_code: 1,
      signal: null,
      failure_class: "OOM",
      events: [],
      log_tail: OOM_LOG.map((text, i) => ({ seq: 41 + i, text })),
    },
    checkpoints: [aCheckpoint("c1", 50), aCheckpoint("c2", 100)],
    suite_hint: null,
    ...over,
  };
}

Deno.test("explainFailure() names a CUDA OOM with its log line and says to fix before retrying", () => {
  const x = explainFailure(input());
  assertEquals([x.cause_id, x.retry], ["cuda_oom", "fails_again"]);
  assertEquals(x.evidence[0].kind, "log");
  assertEquals(x.evidence[0].line_no, 44);
  assertStringIncludes(x.summary, "out of memory");
  assertEquals(x.last_checkpoint, { checkpoint_id: "c2", step: 100, path: "/ckpt/c2" });
  assertEquals(x.next_actions.map((a) => [a.tool, a.args]), [
    ["retry_job", { job_id: "j-1" }],
    ["evaluate_checkpoint", { checkpoint_id: "c2", suite: "default" }],
    ["get_logs", { run_id: "r-1" }],
  ]);
  assertStringIncludes(x.next_actions[0].why, "Only after a fix (e.g. Halve the batch size)");
});

Deno.test("explainFailure() suggests a plain retry for a lost node", () => {
  const x = explainFailure(input({
    run: { id: "r-1", name: "bert", status: "LOST", job_id: "j-1", attempt: 1 },
    failure: {
      status: "LOST",
      exit_code: null,
      signal: null,
      failure_class: "NODE_LOST",
      events: [],
      log_tail: [],
    },
    checkpoints: [],
  }));
  assertEquals(x.retry, "may_help");
  assertEquals(x.next_actions.map((a) => a.tool), ["retry_job", "get_logs"]);
});

Deno.test("explainFailure() does not offer a retry when the job was already requeued", () => {
  const x = explainFailure(input({ job: { id: "j-1", status: "QUEUED", attempt: 2 } }));
  assertEquals(x.next_actions.map((a) => a.tool), ["evaluate_checkpoint", "get_logs"]);
  assertStringIncludes(x.summary, "already requeued as attempt 2");
});

Deno.test("explainFailure() picks the last checkpoint before the loss went NaN", () => {
  const base = input();
  const x = explainFailure(input({
    failure: {
      ...base.failure,
      events: [{ type: "LOSS_NAN", message: "NaN", data: { step: 80 } }],
    },
    suite_hint: "heldout",
  }));
  assertEquals(x.last_checkpoint?.checkpoint_id, "c1");
  assertEquals(x.next_actions.find((a) => a.tool === "evaluate_checkpoint")?.args, {
    checkpoint_id: "c1",
    suite: "heldout",
  });
});

Deno.test("explainFailure() of an unknown cause reads the log first and offers no retry", () => {
  const x = explainFailure(input({
    run: { id: "r-1", name: "bert", status: "FAILED", job_id: null, attempt: 1 },
    job: null,
    failure: {
      status: "FAILED",
      exit_code: null,
      signal: null,
      failure_class: null,
      events: [],
      log_tail: [],
    },
    checkpoints: [],
  }));
  assertEquals(x.cause_id, "unknown");
  assertEquals(x.next_actions.map((a) => a.tool), ["get_logs"]);
});

Deno.test("explainFailure() never points to a checkpoint overwritten by another run, gone or incomplete", () => {
  const x = explainFailure(input({
    checkpoints: [
      aCheckpoint("c1", 50),
      aCheckpoint("c2", 100, {
        overwritten: true,
        overwritten_by_run: "r-9",
        state: "overwritten",
      }),
      aCheckpoint("c3", 150, { state: "gone", gone_at: "2026-01-01T00:00:00.000Z" }),
      aCheckpoint("c4", 200, { state: "incomplete", problem: "the zip was cut short" }),
    ],
  }));
  assertEquals(x.last_checkpoint?.checkpoint_id, "c1");
});
