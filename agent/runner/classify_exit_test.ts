import assert from "node:assert/strict";
import { classifyExit, type ExitFacts } from "./classify_exit.ts";

const base: ExitFacts = {
  exit_code: null,
  signal: null,
  cancelled: false,
  log_tail: [],
  oomKilled: null,
};

const cases: Array<[string, Partial<ExitFacts>, string | null, string | RegExp]> = [
  ["exit 0 is a success", { exit_code: 0 }, null, "exited with code 0"],
  [
    "exit 0 is a success even after a caught OOM",
    { exit_code: 0, log_tail: ["CUDA out of memory, retrying with a smaller batch"] },
    null,
    "exited with code 0",
  ],
  ["exit 1 is EXIT_CODE", { exit_code: 1 }, "EXIT_CODE", "exited with code 1"],
  [
    "a PyTorch OOM line then exit 1 is OOM",
    { exit_code: 1, log_tail: ["step 3", "torch.OutOfMemoryError: CUDA out of memory.", "  at x"] },
    "OOM",
    /^ran out of GPU memory .*exited with code 1$/,
  ],
  [
    "CUBLAS_STATUS_ALLOC_FAILED is OOM",
    {
      exit_code: 1,
      log_tail: ["RuntimeError: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate"],
    },
    "OOM",
    /CUBLAS_STATUS_ALLOC_FAILED/,
  ],
  [
    "cudaErrorMemoryAllocation then SIGABRT is OOM",
    { signal: "SIGABRT", log_tail: ["error: cudaErrorMemoryAllocation"] },
    "OOM",
    /killed by SIGABRT/,
  ],
  [
    "an OOM line more than 100 lines back does not count",
    { exit_code: 1, log_tail: ["CUDA out of memory", ...Array(100).fill("later")] },
    "EXIT_CODE",
    "exited with code 1",
  ],
  [
    "SIGKILL with a risen OOM-kill counter is OOM",
    { signal: "SIGKILL", oomKilled: true },
    "OOM",
    "killed by SIGKILL from the kernel OOM killer",
  ],
  [
    "SIGKILL with an unchanged OOM-kill counter is SIGNAL",
    { signal: "SIGKILL", oomKilled: false },
    "SIGNAL",
    "killed by SIGKILL",
  ],
  [
    "SIGKILL with no readable counter may have been the OOM killer",
    { signal: "SIGKILL", oomKilled: null },
    "SIGNAL",
    "killed by SIGKILL, possibly the kernel OOM killer",
  ],
  [
    "exit 1 after the OOM killer took a worker of the job's cgroup is OOM",
    {
      exit_code: 1,
      oomKilled: true,
      log_tail: ["RuntimeError: DataLoader worker (pid 4242) is killed by signal: Killed."],
    },
    "OOM",
    /^the kernel OOM killer killed a process of the job .*exited with code 1$/,
  ],
  [
    "exit 1 with an unchanged counter stays EXIT_CODE",
    { exit_code: 1, oomKilled: false },
    "EXIT_CODE",
    "exited with code 1",
  ],
  ["SIGSEGV is SIGNAL", { signal: "SIGSEGV" }, "SIGNAL", "killed by SIGSEGV"],
  [
    "a cancelled attempt is CANCELLED whatever ended it",
    { signal: "SIGTERM", cancelled: true, log_tail: ["CUDA out of memory"] },
    "CANCELLED",
    "cancelled; killed by SIGTERM",
  ],
  [
    "a cancelled attempt that exited 0 is CANCELLED",
    { exit_code: 0, cancelled: true },
    "CANCELLED",
    /^cancelled/,
  ],
  [
    "no exit status and no signal is AGENT_RESTART",
    {},
    "AGENT_RESTART",
    /left no exit status/,
  ],
  [
    "127 with 'command not found' last is DISPATCH_FAILED",
    { exit_code: 127, log_tail: ["bash: line 1: trian.py: command not found"] },
    "DISPATCH_FAILED",
    /could not start the program: bash: line 1: trian.py: command not found/,
  ],
  [
    "127 with other output last is EXIT_CODE",
    { exit_code: 127, log_tail: ["command not found", "loss 0.1"] },
    "EXIT_CODE",
    "exited with code 127",
  ],
  [
    "docker's exit 125 is DISPATCH_FAILED",
    {
      exit_code: 125,
      runner: "docker",
      log_tail: ["docker: Error response from daemon: pull access denied"],
    },
    "DISPATCH_FAILED",
    /^docker could not run the container \(exit code 125\): docker: Error/,
  ],
  [
    "docker's exit 125 for an image neither here nor pullable says to build or load it",
    {
      exit_code: 125,
      runner: "docker",
      log_tail: [
        "Unable to find image 'team/train:3' locally",
        'docker: Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: no such host',
        "",
        "Run 'docker run --help' for more information",
      ],
    },
    "DISPATCH_FAILED",
    'image "team/train:3" is not on this node and could not be pulled: build it there ' +
    "(docker build -t team/train:3 .) or load it (docker load -i FILE)",
  ],
  [
    "docker's exit 127 names the program, not the usage hint printed after it",
    {
      exit_code: 127,
      runner: "docker",
      log_tail: [
        'docker: Error response from daemon: failed to create shim task: exec: "trian.py": executable file not found in $PATH: unknown',
        "",
        "Run 'docker run --help' for more information",
      ],
    },
    "DISPATCH_FAILED",
    /^could not start the program: docker: .*"trian\.py": executable file not found/,
  ],
  [
    "a container's OOMKilled with SIGKILL is OOM, saying the container hit its limit",
    { signal: "SIGKILL", oomKilled: true, runner: "docker" },
    "OOM",
    /^killed by SIGKILL from the kernel OOM killer \(docker inspect: OOMKilled\): the container reached its memory limit$/,
  ],
  [
    "a process's exit 125 is EXIT_CODE",
    { exit_code: 125, runner: "process" },
    "EXIT_CODE",
    "exited with code 125",
  ],
];

for (const [name, facts, failureClass, reason] of cases) {
  Deno.test(`classifyExit(): ${name}`, () => {
    const verdict = classifyExit({ ...base, ...facts });
    assert.equal(verdict.failure_class, failureClass);
    if (typeof reason === "string") assert.equal(verdict.reason, reason);
    else assert.match(verdict.reason, reason);
  });
}
