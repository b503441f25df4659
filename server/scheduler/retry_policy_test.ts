import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { CATALOGUE } from "../failure/catalogue.ts";
import { diagnoseFailure } from "../failure/diagnose_failure.ts";
import type { FailureInput } from "../failure/failure_types.ts";
import { automaticRetry } from "../failure/retry.ts";
import {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_MAX_INFRA_ATTEMPTS,
  type DiagnosedCause,
  type FailureClass,
  isInfrastructureFailure,
  type RetryDecision,
  retryDecision,
  type RetryState,
} from "./retry_policy.ts";

interface Case {
  name: string;
  job: RetryState;
  failure: FailureClass;
  cause: DiagnosedCause;
  expect: RetryDecision;
}

const fresh = { attempt: 1, max_attempts: 3, infra_attempts: 0, max_infra_attempts: 5 };
const timeout: DiagnosedCause = {
  cause_id: "nccl_timeout",
  retry: "may_help",
  retry_advice: "A retry may help: timeouts are often transient.",
};
const oom: DiagnosedCause = {
  cause_id: "cuda_oom",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration will fail the same way.",
};
const lost: DiagnosedCause = {
  cause_id: "node_lost",
  retry: "may_help",
  retry_advice: "A retry may help: the node went silent.",
};

const cases: Case[] = [
  {
    name: "requeues a transient cause while attempts remain, quoting the card",
    job: { ...fresh, attempt: 2 },
    failure: "EXIT_CODE",
    cause: timeout,
    expect: {
      requeue: true,
      reason: "Requeued after nccl_timeout (attempt 2 of 3 used): " + timeout.retry_advice,
    },
  },
  {
    name: "gives up on a transient cause once max_attempts are used",
    job: { ...fresh, attempt: 3 },
    failure: "SIGNAL",
    cause: timeout,
    expect: {
      requeue: false,
      reason: "Not requeued after nccl_timeout (attempt 3 of 3 used, none left): " +
        timeout.retry_advice,
    },
  },
  ...(["OOM", "EXIT_CODE", "SIGNAL"] as const).map((failure): Case => ({
    name: `never requeues a deterministic cause, whatever the class (${failure})`,
    job: fresh,
    failure,
    cause: oom,
    expect: { requeue: false, reason: `Not requeued after cuda_oom: ${oom.retry_advice}` },
  })),
  ...(["unknown", "not_a_failure"] as const).map((retry): Case => ({
    name: `never requeues a "${retry}" verdict`,
    job: fresh,
    failure: "SIGNAL",
    cause: { cause_id: "x", retry, retry_advice: "Nothing." },
    expect: { requeue: false, reason: "Not requeued after x: Nothing." },
  })),
  ...(["NODE_LOST", "AGENT_RESTART"] as const).map((failure): Case => ({
    name: `requeues ${failure} even when max_attempts are used`,
    job: { ...fresh, attempt: 3 },
    failure,
    cause: lost,
    expect: {
      requeue: true,
      reason: "Requeued after node_lost (infrastructure failure 1 of 5, not counted against " +
        `max_attempts): ${lost.retry_advice}`,
    },
  })),
  {
    name: "gives up on infrastructure failures at max_infra_attempts",
    job: { ...fresh, attempt: 5, infra_attempts: 4 },
    failure: "NODE_LOST",
    cause: lost,
    expect: {
      requeue: false,
      reason: `Not requeued after node_lost (infrastructure failure 5 of 5): ${lost.retry_advice}`,
    },
  },
  {
    name: "does not count infrastructure failures against max_attempts",
    // Attempts 1 and 2 were lost with their node; attempt 3 is the first real failure.
    job: { ...fresh, attempt: 3, infra_attempts: 2 },
    failure: "EXIT_CODE",
    cause: timeout,
    expect: {
      requeue: true,
      reason: `Requeued after nccl_timeout (attempt 1 of 3 used): ${timeout.retry_advice}`,
    },
  },
  {
    name: "uses the default limits when the job has none",
    job: { attempt: DEFAULT_MAX_ATTEMPTS, infra_attempts: 0 },
    failure: "SIGNAL",
    cause: timeout,
    expect: {
      requeue: false,
      reason: "Not requeued after nccl_timeout (attempt 3 of 3 used, none left): " +
        timeout.retry_advice,
    },
  },
  {
    name: "uses the default infrastructure limit when the job has none",
    job: { attempt: 9, infra_attempts: DEFAULT_MAX_INFRA_ATTEMPTS - 1 },
    failure: "AGENT_RESTART",
    cause: lost,
    expect: {
      requeue: false,
      reason: `Not requeued after node_lost (infrastructure failure 5 of 5): ${lost.retry_advice}`,
    },
  },
  {
    name: "never requeues a job allowed a single attempt",
    job: { ...fresh, max_attempts: 1 },
    failure: "SIGNAL",
    cause: timeout,
    expect: {
      requeue: false,
      reason: "Not requeued after nccl_timeout (attempt 1 of 1 used, none left): " +
        timeout.retry_advice,
    },
  },
];

for (const c of cases) {
  Deno.test(`retryDecision() ${c.name}`, () => {
    deepStrictEqual(retryDecision(c.job, c.failure, c.cause), c.expect);
  });
}

Deno.test("retryDecision() defaults to 3 attempts and 5 infrastructure failures", () => {
  strictEqual(DEFAULT_MAX_ATTEMPTS, 3);
  strictEqual(DEFAULT_MAX_INFRA_ATTEMPTS, 5);
});

Deno.test("isInfrastructureFailure() is true only for NODE_LOST and AGENT_RESTART", () => {
  const all: FailureClass[] = [
    "OOM",
    "EXIT_CODE",
    "DISPATCH_FAILED",
    "NODE_LOST",
    "AGENT_RESTART",
    "SIGNAL",
    "CANCELLED",
  ];
  deepStrictEqual(all.filter(isInfrastructureFailure), ["NODE_LOST", "AGENT_RESTART"]);
});

/** One run that each catalogue entry explains: the entry's id and what the agent reported. */
const EXAMPLES: Record<string, Partial<FailureInput> & { log?: string }> = {
  cancelled: {
    status: "CANCELLED",
    failure_class: "CANCELLED",
    exit_code: null,
    signal: "SIGTERM",
  },
  node_lost: { status: "LOST", failure_class: "NODE_LOST", exit_code: null },
  agent_restart: { failure_class: "AGENT_RESTART", exit_code: null },
  cuda_oom: { failure_class: "OOM", log: "torch.OutOfMemoryError: CUDA out of memory." },
  shm_exhausted: { log: "ERROR: Unexpected bus error encountered in worker." },
  cuda_version_mismatch: {
    log: "RuntimeError: The NVIDIA driver on your system is too old (found version 11040).",
  },
  state_dict_mismatch: {
    log:
      'RuntimeError: Error(s) in loading state_dict for Net:\n\tMissing key(s) in state_dict: "fc.weight".',
  },
  gpu_hardware_error: { log: "RuntimeError: CUDA error: uncorrectable ECC error encountered" },
  disk_full: { log: "OSError: [Errno 28] No space left on device: '/ckpt/step_9.pt'" },
  module_not_found: { log: "ModuleNotFoundError: No module named 'cleanfid'" },
  command_not_found: { exit_code: 127, log: "bash: line 1: torchrun: command not found" },
  no_cuda_device: { log: "RuntimeError: No CUDA GPUs are available" },
  device_mismatch: {
    log:
      "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
  },
  shape_mismatch: {
    log: "RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x1336 and 2048x4096)",
  },
  nccl_timeout: {
    log: "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
  },
  port_in_use: { log: "RuntimeError: Address already in use" },
  cuda_device_error: { log: "RuntimeError: CUDA error: device-side assert triggered" },
  cudnn_error: { log: "RuntimeError: cuDNN error: CUDNN_STATUS_EXECUTION_FAILED" },
  file_not_found: { log: "FileNotFoundError: [Errno 2] No such file or directory: '/data/x.csv'" },
  permission_denied: { log: "PermissionError: [Errno 13] Permission denied: '/out/log.txt'" },
  nccl_error: { log: "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1" },
  nan_loss: { log: "step 10 | loss nan" },
  connection_reset: { log: "RuntimeError: Connection reset by peer" },
  host_oom_killed: { exit_code: 137, failure_class: "OOM", signal: null },
  segfault: { exit_code: 139, failure_class: "SIGNAL" },
  dispatch_failed: { failure_class: "DISPATCH_FAILED", exit_code: null },
  aborted: { exit_code: 134, failure_class: "SIGNAL" },
  interrupted: { exit_code: 130, failure_class: "EXIT_CODE", log: "KeyboardInterrupt" },
  terminated: { exit_code: null, signal: "SIGTERM", failure_class: "SIGNAL" },
  killed: { exit_code: null, signal: "SIGKILL", failure_class: "SIGNAL" },
  python_exception: { log: "Traceback (most recent call last):\nValueError: bad value" },
  nonzero_exit: { exit_code: 2, log: "usage: train.py [-h]" },
  too_many_open_files: { log: "OSError: [Errno 24] Too many open files" },
  abi_mismatch: { log: "ImportError: /x/_C.so: undefined symbol: _ZN3c105ErrorC1E" },
  hub_auth: { log: "huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: 1)" },
  hub_unreachable: {
    log: "OSError: We couldn't connect to 'https://huggingface.co' to load this file",
  },
  ddp_unused_parameters: {
    log: "RuntimeError: Expected to have finished reduction in the prior iteration before " +
      "starting a new one.",
  },
  dataloader_pickling: { log: "AttributeError: Can't pickle local object 'f.<locals>.g'" },
  recursion_error: { log: "RecursionError: maximum recursion depth exceeded" },
  dataloader_worker_killed: {
    log: "RuntimeError: DataLoader worker (pid 42) is killed by signal: Killed.",
  },
};

Deno.test("for every cause in the catalogue, the card's retry advice and the scheduler's decision agree", () => {
  const ids = CATALOGUE.map((e) => e.id);
  deepStrictEqual(Object.keys(EXAMPLES).sort(), [...ids].sort(), "an example per cause");
  for (const entry of CATALOGUE) {
    const { log = "", ...over } = EXAMPLES[entry.id];
    const input: FailureInput = {
      status: "FAILED",
      exit_code: 1,
      signal: null,
      failure_class: "EXIT_CODE",
      events: [],
      log_tail: log ? log.split("\n").map((text, i) => ({ seq: i + 1, text })) : [],
      ...over,
    };
    const card = diagnoseFailure(input);
    strictEqual(card.cause_id, entry.id, `the example of ${entry.id} is diagnosed as itself`);
    const plan = automaticRetry(card.retry);
    ok(card.retry_advice.endsWith(plan.sentence), `${entry.id}: the card says what gpuctl does`);
    const failureClass = (input.failure_class ?? "EXIT_CODE") as FailureClass;
    for (const attempt of [1, 2]) {
      const decision = retryDecision({ ...fresh, attempt }, failureClass, card);
      strictEqual(decision.requeue, plan.requeue, `${entry.id}: requeued as the card says`);
      ok(decision.reason.endsWith(card.retry_advice), `${entry.id}: the reason quotes the card`);
    }
    strictEqual(
      /^A retry may help/.test(card.retry_advice),
      plan.requeue,
      `${entry.id}: "a retry may help" exactly when gpuctl retries`,
    );
  }
});
