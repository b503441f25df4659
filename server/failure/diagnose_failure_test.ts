import assert from "node:assert/strict";
import type { CauseEntry } from "./cause.ts";
import { findLine, logEvidence } from "./cause.ts";
import { diagnoseFailure } from "./diagnose_failure.ts";
import { failed } from "./_test_input.ts";

const OOM_TAIL = `
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 187, in main
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 1 has a total capacity of 23.64 GiB of which 301.06 MiB is free.
`;

Deno.test("diagnoseFailure() returns the documented shape", () => {
  const d = diagnoseFailure(failed(OOM_TAIL));
  assert.deepEqual(Object.keys(d).sort(), [
    "cause_id",
    "confidence",
    "evidence",
    "likely_cause",
    "retry",
    "retry_advice",
    "suggested_fixes",
  ]);
  for (const e of d.evidence) {
    assert.ok(["exit_code", "signal", "log", "event", "failure_class"].includes(e.kind));
    if (e.kind === "log") assert.equal(typeof e.line_no, "number");
  }
  assert.ok(d.suggested_fixes.length > 0);
});

Deno.test("diagnoseFailure() prefers CUDA OOM in the log over exit 137, keeping the kill as secondary evidence", () => {
  const d = diagnoseFailure(failed(OOM_TAIL, { exit_code: 137 }));
  assert.equal(d.cause_id, "cuda_oom");
  assert.deepEqual(d.evidence, [
    { kind: "log", detail: d.evidence[0].detail, line_no: 1003 },
    {
      kind: "exit_code",
      detail:
        "exit code 137 (128 + 9: killed by SIGKILL) (also fits: killed by a signal (SIGKILL))",
    },
    { kind: "log", detail: "raised at /home/ana/proj/train.py:187 in main", line_no: 1001 },
  ]);
  assert.match(d.evidence[0].detail, /^torch\.OutOfMemoryError: CUDA out of memory/);
});

Deno.test("diagnoseFailure() prefers CUDA OOM over the generic traceback, without quoting the line twice", () => {
  const d = diagnoseFailure(failed(OOM_TAIL));
  assert.equal(d.cause_id, "cuda_oom");
  assert.equal(d.evidence.filter((e) => e.line_no === 1003).length, 1);
  assert.deepEqual(d.evidence.map((e) => e.kind), ["log", "exit_code", "log"]);
  assert.match(d.evidence[2].detail, /^raised at \/home\/ana\/proj\/train\.py:187 in main$/);
});

Deno.test("diagnoseFailure() mentions an earlier LOSS_NAN event as a secondary finding", () => {
  const d = diagnoseFailure(failed(OOM_TAIL, {
    events: [{ type: "LOSS_NAN", message: 'Loss "train/loss" is NaN at step 300' }],
  }));
  assert.equal(d.cause_id, "cuda_oom");
  assert.ok(d.evidence.some((e) =>
    e.kind === "event" &&
    e.detail === 'Loss "train/loss" is NaN at step 300 (also fits: loss became NaN)'
  ));
});

Deno.test("diagnoseFailure() ranks by how specific each match is (table)", () => {
  const cases: { name: string; log: string; over?: Parameters<typeof failed>[1]; want: string }[] =
    [
      {
        name: "a named NCCL timeout beats the C++ abort it causes",
        log: `
[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=BROADCAST, Timeout(ms)=1800000) ran for 1800021 milliseconds before timing out.
terminate called after throwing an instance of 'c10::DistBackendError'
`,
        over: { exit_code: -6 },
        want: "nccl_timeout",
      },
      {
        // A CUDA or cuDNN library of the build is a CUDA install's (causes_cuda_test.ts).
        name: "a missing native library on import beats the bare exception",
        log: `
Traceback (most recent call last):
  File "/x/train.py", line 1, in <module>
    import cv2
ImportError: libGL.so.1: cannot open shared object file: No such file or directory
`,
        want: "module_not_found",
      },
      {
        name: "a cancel beats the signal and the traceback it causes",
        log: `
Traceback (most recent call last):
  File "/x/train.py", line 1, in <module>
KeyboardInterrupt
`,
        over: { exit_code: 130, failure_class: "CANCELLED", status: "CANCELLED" },
        want: "cancelled",
      },
      {
        name: "a lost node beats the partial log",
        log: `
Traceback (most recent call last):
  File "/x/train.py", line 1, in <module>
`,
        over: { exit_code: null, status: "LOST", failure_class: "NODE_LOST" },
        want: "node_lost",
      },
      {
        name: "a segfault line beats the traceback printed after it",
        log: `
Segmentation fault (core dumped)
Traceback (most recent call last):
  File "/x/launch.py", line 30, in <module>
subprocess.CalledProcessError: Command '['python', 'train.py']' died with <Signals.SIGSEGV: 11>.
`,
        want: "segfault",
      },
    ];
  for (const { name, log, over, want } of cases) {
    assert.equal(diagnoseFailure(failed(log, over)).cause_id, want, name);
  }
});

Deno.test("diagnoseFailure() takes an extended catalogue", () => {
  const tpu: CauseEntry = {
    id: "wandb_login",
    title: "W&B not logged in",
    retry: "fails_again",
    retry_advice: "A retry will fail the same way until the API key is set.",
    fixes: ["Set WANDB_API_KEY in the job's env, or WANDB_MODE=offline"],
    match(facts) {
      const hit = findLine(facts, [/wandb\.errors\.UsageError: api_key not configured/]);
      return hit
        ? { confidence: 0.9, likely_cause: "W&B has no API key", evidence: [logEvidence(hit.line)] }
        : null;
    },
  };
  const d = diagnoseFailure(
    failed(
      "wandb.errors.UsageError: api_key not configured (no-tty). call wandb.login(key=[your_api_key])",
    ),
    [tpu],
  );
  assert.equal(d.cause_id, "wandb_login");
  assert.deepEqual(d.evidence[0].line_no, 1000);
});

Deno.test("diagnoseFailure() does not add the host OOM killer to a GPU OOM unless the OOM-kill counter rose", () => {
  const gpu = diagnoseFailure(failed(OOM_TAIL, { failure_class: "OOM" }));
  assert.equal(gpu.cause_id, "cuda_oom");
  assert.ok(!gpu.evidence.some((e) => e.detail.includes("host OOM killer")), "no host OOM");
  const both = diagnoseFailure(
    failed(OOM_TAIL, { failure_class: "OOM", exit_code: null, signal: "SIGKILL" }),
  );
  assert.ok(
    both.evidence.some((e) => e.detail.includes("(also fits: killed by the host OOM killer)")),
  );
});

Deno.test("diagnoseFailure() quotes a multi-line exception message with its continuation lines", () => {
  const d = diagnoseFailure(failed(`
Traceback (most recent call last):
  File "/w/train.py", line 88, in <module>
    loss = criterion(out, labels)
RuntimeError: CUDA error: device-side assert triggered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.

[2024-05-01 10:00:00] INFO saving
`));
  assert.equal(d.cause_id, "cuda_device_error");
  assert.deepEqual(d.evidence[0].detail.split("\n"), [
    "RuntimeError: CUDA error: device-side assert triggered",
    "CUDA kernel errors might be asynchronously reported at some other API call, so the " +
    "stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1.",
  ]);
  assert.equal(d.evidence[0].line_no, 1003);
  const plain = diagnoseFailure(failed(`
Traceback (most recent call last):
  File "/w/train.py", line 3, in <module>
    check(cfg)
ValueError: bad config:
  lr must be > 0
  warmup must be < steps
`));
  assert.equal(plain.cause_id, "python_exception");
  assert.equal(
    plain.evidence[0].detail,
    "last traceback's exception: ValueError: bad config:\nlr must be > 0\nwarmup must be < steps",
  );
});
