import assert from "node:assert/strict";
import { diagnoseFailure } from "./diagnose_failure.ts";
import { expectDiagnosis, failed } from "./_test_input.ts";

const KEY_ERROR = `
Epoch 1/10: 100%|██████████| 500/500 [01:40<00:00,  4.98it/s]
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 210, in <module>
    main(cfg)
  File "/home/ana/proj/train.py", line 174, in main
    metrics = evaluate(model, val_loader, cfg)
  File "/home/ana/proj/eval.py", line 58, in evaluate
    scores[batch["label_name"]] += acc
KeyError: 'label_name'
`;

const CHAINED = `
Traceback (most recent call last):
  File "/home/ana/proj/config.py", line 12, in load
    return json.loads(text)
json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 20, in <module>
    cfg = load("configs/base.json")
  File "/home/ana/proj/config.py", line 14, in load
    raise ValueError(f"bad config file {path}") from None
ValueError: bad config file configs/base.json
`;

Deno.test("diagnoseFailure() falls back to the last traceback's exception, quoted (table)", () => {
  const cases = [
    {
      name: "KeyError in user code",
      input: failed(KEY_ERROR),
      want: {
        cause: "python_exception",
        line: 1008,
        likely:
          /^The training code raised "KeyError: 'label_name'" \(in evaluate, \/home\/ana\/proj\/eval\.py:58\)$/,
        retry: "fails_again" as const,
      },
    },
    {
      name: "chained exceptions: the last block's exception",
      input: failed(CHAINED),
      want: {
        cause: "python_exception",
        line: 1012,
        likely: /"ValueError: bad config file configs\/base\.json"/,
        retry: "fails_again" as const,
      },
    },
  ];
  for (const { name, input, want } of cases) expectDiagnosis(name, input, want);
});

Deno.test("diagnoseFailure() quotes the last non-empty lines when there is no traceback", () => {
  const d = expectDiagnosis(
    "plain exit 3",
    failed(
      `
[train] loading config configs/base.yaml
[train] error: unknown optimizer "adamw8bit"

`,
      { exit_code: 3 },
    ),
    {
      cause: "nonzero_exit",
      likely:
        /^The process exited with code 3; its last lines: "\[train\] loading config configs\/base\.yaml \| \[train\] error: unknown optimizer "adamw8bit""$/,
      retry: "fails_again",
    },
  );
  assert.deepEqual(d.evidence.map((e) => e.line_no), [undefined, 1000, 1001]);
  assert.ok(d.confidence <= 0.2);
});

Deno.test("diagnoseFailure() says so when nothing points to a cause", () => {
  const d = diagnoseFailure(failed("", { exit_code: null, failure_class: null }));
  assert.equal(d.cause_id, "unknown");
  assert.match(
    d.likely_cause,
    /No known failure signature: status FAILED, no exit code, and no log lines/,
  );
  // Retry advice is always a decision: a failure with no cause is taken as one that repeats.
  assert.equal(d.retry, "fails_again");
  assert.match(
    d.retry_advice,
    /^A retry with the same configuration will most likely end the same way/,
  );
  const ok = diagnoseFailure(
    failed("done", { status: "SUCCEEDED", exit_code: 0, failure_class: null }),
  );
  assert.equal(ok.cause_id, "unknown");
  assert.match(
    ok.likely_cause,
    /No failure found: the run's status is SUCCEEDED and it exited with code 0/,
  );
  assert.equal(ok.retry, "not_a_failure");
});

// torchrun's report of children that exited with status 1, no child traceback in the log
// (CVMI-Lab/PLA#18); its `failed (exitcode: 1)` line before its own cut traceback
// (Facico/Chinese-Vicuna#113); DeepSpeed-Chat's step status (deepspeedai/DeepSpeed#3208).
const TORCHRUN_STATUS_1 = `
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2023-09-04_10:10:23
  host      : ubuntu
  rank      : 1 (local_rank: 1)
  exitcode  : 1 (pid: 3669031)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
`;
const TORCHRUN_CUT = `
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 1622990) of binary: /home/user/anaconda3/envs/lang/bin/python
Traceback (most recent call last):
  File "/home/user/anaconda3/envs/lang/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/home/user/anaconda3/envs/lang/lib/python3.8/site-packages/torch/distributed/run.py", line 794, in main
    run(args)
`;
const DSCHAT_STEP = `
---=== Running Step 1 ===---
Traceback (most recent call last):
  File "/DeepSpeed/DeepSpeedExamples/applications/DeepSpeed-Chat/train.py", line 192, in launch_cmd
    raise RuntimeError(
RuntimeError: Step 1 exited with non-zero status 1
`;
// The child's own exception in the log decides.
const TORCHRUN_WITH_CHILD_ERROR = `
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    main()
ValueError: unknown dataset "cifar11"
${TORCHRUN_STATUS_1}`;

Deno.test("diagnoseFailure() reads a launcher's report of a child's plain exit status as that status, not the launcher's exception", () => {
  for (
    const [name, log] of [["ChildFailedError", TORCHRUN_STATUS_1], ["cut", TORCHRUN_CUT], [
      "DeepSpeed-Chat",
      DSCHAT_STEP,
    ]]
  ) {
    const d = expectDiagnosis(name, failed(log), {
      cause: "nonzero_exit",
      likely:
        /^The launcher reported that its child.* exited with status 1; the child's own error is not/,
      retry: "fails_again",
    });
    assert.match(d.evidence[0].detail, /^the launcher's report: /);
  }
  expectDiagnosis("child's error shown", failed(TORCHRUN_WITH_CHILD_ERROR), {
    cause: "python_exception",
    likely: /unknown dataset/,
    retry: "fails_again",
  });
});

// The child's traceback above torchrun's `failed (exitcode: 1)` line and its own cut traceback;
// and a child whose traceback Rich drew in a box, ending in a bare `Exception: …` line.
const CHILD_THEN_TORCHRUN_CUT = `
Traceback (most recent call last):
  File "train.py", line 40, in <module>
    opt.plots and plot_labels(labels)
AttributeError: 'Namespace' object has no attribute 'plots'
${TORCHRUN_CUT}`;
const RICH_CHILD_THEN_TORCHRUN_CUT = `
╭───────────────────── Traceback (most recent call last) ─────────────────────╮
│ /srv/app/train.py:88 in <module>                                             │
│ ❱ 88 │   tok = load_tokenizer(cfg.tokenizer_path)                            │
╰──────────────────────────────────────────────────────────────────────────────╯
Exception: data did not match any variant of untagged enum ModelWrapper
${TORCHRUN_CUT}`;

Deno.test("diagnoseFailure() reads the child's own exception above a launcher's cut traceback", () => {
  for (
    const [name, log, said] of [
      ["traceback", CHILD_THEN_TORCHRUN_CUT, /no attribute 'plots'/],
      ["Rich", RICH_CHILD_THEN_TORCHRUN_CUT, /untagged enum ModelWrapper/],
    ] as const
  ) {
    const d = expectDiagnosis(name, failed(log), {
      cause: "python_exception",
      likely: said,
      retry: "fails_again",
    });
    assert.match(d.evidence[0].detail, /^the child's exception: /);
  }
});
