import assert from "node:assert/strict";
import { diagnoseFailure } from "./diagnose_failure.ts";
import { expectDiagnosis, failed } from "./_test_input.ts";

const KILLED = `
Loading dataset shards: 100%|██████████| 8/8 [01:12<00:00,  9.05s/it]
Tokenizing: 63%|██████▎   | 1260000/2000000 [03:10<01:51, 6621.31 examples/s]
Killed
`;

const WORKER_KILLED = `
Epoch 2:  40%|████      | 400/1000 [02:10<03:15,  3.07it/s]
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 150, in <module>
    for batch in loader:
  File "/home/ana/.venv/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1133, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/home/ana/.venv/lib/python3.10/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 48213) is killed by signal: Killed.
`;

const SEGFAULT = `
Fatal Python error: Segmentation fault

Thread 0x00007f3b2d7fe700 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 324 in wait
  File "/usr/lib/python3.10/threading.py", line 600 in wait

Current thread 0x00007f3c1a9b8740 (most recent call first):
  File "/home/ana/.venv/lib/python3.10/site-packages/torchvision/io/image.py", line 254 in decode_jpeg
  File "/home/ana/proj/data.py", line 41 in __getitem__
Segmentation fault (core dumped)
`;

const ABORT = `
terminate called after throwing an instance of 'c10::Error'
  what():  CUDA error: an illegal instruction was encountered
Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44 (most recent call first):
Aborted (core dumped)
`;

const ABORT_OTHER = `
terminate called after throwing an instance of 'std::logic_error'
  what():  basic_string::_M_construct null not valid
Aborted (core dumped)
`;

const NOT_FOUND = `
bash: line 1: torchrun: command not found
`;

const INTERRUPTED = `
step 900 | loss 1.20
Terminated
`;

Deno.test("diagnoseFailure() recognises process deaths from exit status and log tails (table)", () => {
  const cases = [
    {
      name: "Killed after the host ran out of RAM (exit 137)",
      input: failed(KILLED, { exit_code: 137 }),
      want: {
        cause: "host_oom_killed",
        line: 1002,
        likely: /OOM killer/,
        retry: "fails_again" as const,
        fix: /num_workers/,
        minConfidence: 0.8,
      },
    },
    {
      // Not the host's OOM killer unless the job's OOM-kill counter rose.
      name: "DataLoader worker killed (exit 1), the counter did not rise",
      input: failed(WORKER_KILLED),
      want: {
        cause: "dataloader_worker_killed",
        line: 1008,
        likely: /^A DataLoader worker \(pid 48213\) died of SIGKILL, and the job's OOM-kill/,
        retry: "may_help" as const,
      },
    },
    {
      name: "DataLoader worker killed (exit 1), the counter rose",
      input: failed(WORKER_KILLED, { failure_class: "OOM" }),
      want: {
        cause: "host_oom_killed",
        likely: /^A DataLoader worker was killed \(SIGKILL\) by the kernel's OOM killer/,
        retry: "fails_again" as const,
      },
    },
    {
      name: "segfault in native code (exit 139)",
      input: failed(SEGFAULT, { exit_code: 139 }),
      want: {
        cause: "segfault",
        line: 1000,
        retry: "fails_again" as const,
        fix: /faulthandler/,
        minConfidence: 0.85,
      },
    },
    {
      name: "C++ abort quoting what()",
      input: failed(ABORT_OTHER, { exit_code: 134 }),
      want: {
        cause: "aborted",
        line: 1000,
        likely: /"basic_string::_M_construct null not valid"/,
        retry: "fails_again" as const,
      },
    },
    {
      // The abort only reports the error its what() names, a known one here.
      name: "C++ abort of a CUDA kernel fault",
      input: failed(ABORT, { exit_code: 134 }),
      want: {
        cause: "cuda_device_error",
        likely: /an illegal instruction was encountered/,
        retry: "fails_again" as const,
      },
    },
    {
      name: "command not found (exit 127)",
      input: failed(NOT_FOUND, { exit_code: 127, failure_class: "DISPATCH_FAILED" }),
      want: {
        cause: "command_not_found",
        line: 1000,
        likely: /"torchrun"/,
        retry: "fails_again" as const,
        fix: /absolute path/,
      },
    },
    {
      name: "SIGTERM from outside gpuctl",
      input: failed(INTERRUPTED, { exit_code: null, signal: "SIGTERM", failure_class: "SIGNAL" }),
      want: { cause: "terminated", retry: "may_help" as const },
    },
  ];
  for (const { name, input, want } of cases) expectDiagnosis(name, input, want);
});

Deno.test("diagnoseFailure() reads the signal off exit codes and reported names alike", () => {
  const cases: [Partial<Parameters<typeof failed>[1]>, string][] = [
    // A SIGKILL without the OOM-kill counter rising and without a Killed line.
    [{ exit_code: 137 }, "killed"],
    [{ exit_code: -9 }, "killed"],
    [{ exit_code: null, signal: "KILL" }, "killed"],
    [{ exit_code: null, signal: "9" }, "killed"],
    [{ exit_code: null, signal: "SIGKILL", failure_class: "OOM" }, "host_oom_killed"],
    [{ exit_code: 139 }, "segfault"],
    [{ exit_code: null, signal: "SIGSEGV" }, "segfault"],
    [{ exit_code: -11 }, "segfault"],
    [{ exit_code: 143 }, "terminated"],
    [{ exit_code: 130 }, "interrupted"],
    [{ exit_code: null, signal: "SIGHUP" }, "terminated"],
    [{ exit_code: 127 }, "command_not_found"],
    [{ exit_code: 126 }, "permission_denied"],
  ];
  for (const [over, cause] of cases) {
    assert.equal(diagnoseFailure(failed("", over)).cause_id, cause, JSON.stringify(over));
  }
});

Deno.test("diagnoseFailure() calls a bare SIGKILL killed by a signal, and host OOM only with a Killed line or the counter", () => {
  const bare = diagnoseFailure(failed("", { exit_code: 137, failure_class: "SIGNAL" }));
  const killed = diagnoseFailure(failed(KILLED, { exit_code: 137, failure_class: "SIGNAL" }));
  const classed = diagnoseFailure(failed(KILLED, { exit_code: 137, failure_class: "OOM" }));
  const counted = diagnoseFailure(failed("", { exit_code: 137, failure_class: "OOM" }));
  assert.deepEqual([bare.cause_id, bare.retry], ["killed", "may_help"]);
  assert.deepEqual(bare.evidence, [{
    kind: "exit_code",
    detail: "exit code 137 (128 + 9: killed by SIGKILL)",
  }]);
  assert.match(bare.likely_cause, /no rise of the job's OOM-kill counter, no `Killed` line/);
  for (const d of [killed, classed, counted]) {
    assert.deepEqual([d.cause_id, d.retry], ["host_oom_killed", "fails_again"]);
  }
  assert.ok(killed.confidence < classed.confidence);
  // A cgroup's limit may be what was reached, with the host's RAM free.
  assert.match(
    counted.likely_cause,
    /by the kernel's OOM killer: the job reached its memory limit \(its cgroup's limit, or the host's RAM\)/,
  );
});

Deno.test("diagnoseFailure() counts the shell's Killed at the end of a progress bar line", () => {
  const d = expectDiagnosis(
    "tqdm then Killed",
    failed(
      " 31%|█████▉             | 331/1063 [01:06<03:59,  3.06it/s]Killed\n",
      { exit_code: 137, failure_class: "SIGNAL" },
    ),
    { cause: "host_oom_killed", line: 1000, retry: "fails_again" },
  );
  assert.match(d.evidence[0].detail, /3\.06it\/s\]Killed$/);
});

Deno.test("diagnoseFailure() takes a torchrun worker's exitcode -9 as killed by a signal", () => {
  expectDiagnosis(
    "worker -9",
    failed(
      "E0325 20:57:27.620000 2606 api.py:869] failed (exitcode: -9) local_rank: 5 (pid: 2630) of binary: /root/miniconda3/bin/python\n",
    ),
    { cause: "killed", line: 1000, retry: "may_help" },
  );
});

Deno.test("diagnoseFailure() reports a lost node, an agent restart and a cancel from the control plane", () => {
  const lost = expectDiagnosis(
    "lost",
    failed("step 100 | loss 2.0", {
      status: "LOST",
      exit_code: null,
      failure_class: "NODE_LOST",
    }),
    { cause: "node_lost", retry: "may_help", fix: /gpuctl nodes/, minConfidence: 0.95 },
  );
  assert.deepEqual(lost.evidence[0], {
    kind: "failure_class",
    detail: "failure class NODE_LOST (no heartbeat from the node for 90 s)",
  });
  expectDiagnosis(
    "status LOST alone",
    failed("", { status: "LOST", exit_code: null, failure_class: null }),
    {
      cause: "node_lost",
      retry: "may_help",
    },
  );
  expectDiagnosis(
    "agent restart",
    failed("", { exit_code: null, failure_class: "AGENT_RESTART" }),
    {
      cause: "agent_restart",
      retry: "may_help",
    },
  );
  const cancelled = expectDiagnosis(
    "cancel (SIGTERM, then a KeyboardInterrupt traceback)",
    failed(
      `
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 80, in <module>
    loss.backward()
KeyboardInterrupt
`,
      { status: "CANCELLED", exit_code: -15, failure_class: "CANCELLED", cancelled_by: "ana" },
    ),
    { cause: "cancelled", likely: /^The run was cancelled by "ana"$/, retry: "not_a_failure" },
  );
  assert.equal(cancelled.confidence, 0.99);
  assert.deepEqual(cancelled.suggested_fixes, []);
});

// dash's `not found` for the launcher a Python script starts, then that script's traceback cut
// before its exception (AndyJZhao/GLEM#11).
const DASH_NOT_FOUND = `
sh: 1: /home/user/miniconda/envs/ct/bin/torchrun: not found
Traceback (most recent call last):
  File "src/models/GLEM/trainGLEM.py", line 22, in <module>
    train_glem(args)
  File "/data/user/GLEM/src/utils/function/os_utils.py", line 283, in wrapper
    ret = func(*args, **kw)
`;

Deno.test("diagnoseFailure() reads dash's 'not found' for a program as a missing command", () => {
  expectDiagnosis("dash not found", failed(DASH_NOT_FOUND), {
    cause: "command_not_found",
    line: 1000,
    likely: /"\/home\/user\/miniconda\/envs\/ct\/bin\/torchrun" was not found/,
    retry: "fails_again",
  });
  expectDiagnosis("dash script", failed("./run.sh: 24: ./run.sh: th: not found"), {
    cause: "command_not_found",
    likely: /"th" was not found/,
    retry: "fails_again",
  });
});

Deno.test("diagnoseFailure() reads Windows' paging file and a Chinese shell's Killed as host memory", () => {
  expectDiagnosis(
    "WinError 1455",
    failed(
      'OSError: [WinError 1455] The paging file is too small for this operation to complete. Error loading "C:\\Python310\\lib\\site-packages\\torch\\lib\\cudnn_adv_infer64_8.dll" or one of its dependencies.',
    ),
    { cause: "host_oom_killed", line: 1000, retry: "fails_again", fix: /num_workers/ },
  );
  expectDiagnosis("已杀死", failed("step 12 loss 0.3\n已杀死", { exit_code: 137 }), {
    cause: "host_oom_killed",
    line: 1001,
    retry: "fails_again",
  });
});

Deno.test("diagnoseFailure() retries a SIGINT from outside the job, never a gpuctl cancel", () => {
  const sigint = diagnoseFailure(
    failed(
      'Traceback (most recent call last):\n  File "t.py", line 3, in <module>\n    step()\nKeyboardInterrupt',
      {
        exit_code: null,
        signal: "SIGINT",
        failure_class: "SIGNAL",
      },
    ),
  );
  assert.deepEqual([sigint.cause_id, sigint.retry], ["interrupted", "may_help"]);
  const cancelled = diagnoseFailure(
    failed("KeyboardInterrupt", { exit_code: null, signal: "SIGINT", failure_class: "CANCELLED" }),
  );
  assert.deepEqual([cancelled.cause_id, cancelled.retry], ["cancelled", "not_a_failure"]);
});
