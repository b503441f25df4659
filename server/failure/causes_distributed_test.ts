import assert from "node:assert/strict";
import { diagnoseFailure } from "./diagnose_failure.ts";
import { expectDiagnosis, failed } from "./_test_input.ts";

const WATCHDOG_TIMEOUT = `
[rank1]:[E ProcessGroupNCCL.cpp:563] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1543, OpType=ALLREDUCE, NumelIn=33554432, NumelOut=33554432, Timeout(ms)=600000) ran for 600155 milliseconds before timing out.
[rank1]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank 1] Timeout at NCCL work: 1543, last enqueued NCCL work: 1543, last completed NCCL work: 1542.
[rank1]:[E ProcessGroupNCCL.cpp:577] [Rank 1] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank1]:[E ProcessGroupNCCL.cpp:583] [Rank 1] To avoid data inconsistency, we are taking the entire process down.
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 0 Rank 1] Process group watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1543, OpType=ALLREDUCE, NumelIn=33554432, NumelOut=33554432, Timeout(ms)=600000) ran for 600155 milliseconds before timing out.
W0612 14:02:11.377000 140211 torch/distributed/elastic/multiprocessing/api.py:858] Sending process 140245 closing signal SIGTERM
E0612 14:02:12.017000 140211 torch/distributed/elastic/multiprocessing/api.py:833] failed (exitcode: -6) local_rank: 1 (pid: 140246) of binary: /opt/conda/bin/python
Traceback (most recent call last):
  File "/opt/conda/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 892, in main
    run(args)
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/launcher/api.py", line 263, in launch_agent
    raise ChildFailedError(
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-06-12_14:02:11
  host      : gpu-2
  rank      : 1 (local_rank: 1)
  exitcode  : -6 (pid: 140246)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 140246
============================================================
`;

const NCCL_SYSTEM_ERROR = `
[rank0]: Traceback (most recent call last):
[rank0]:   File "/workspace/train_ddp.py", line 77, in <module>
[rank0]:     model = DDP(model, device_ids=[local_rank])
[rank0]:   File "/opt/conda/lib/python3.10/site-packages/torch/nn/parallel/distributed.py", line 822, in __init__
[rank0]:     _verify_param_shape_across_processes(self.process_group, parameters)
[rank0]:   File "/opt/conda/lib/python3.10/site-packages/torch/distributed/utils.py", line 288, in _verify_param_shape_across_processes
[rank0]:     return dist._verify_params_across_processes(process_group, tensors, logger)
[rank0]: torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
[rank0]: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
[rank0]: Last error:
[rank0]: Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)
`;

const PORT_TAKEN = `
[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use).
[W socket.cpp:464] [c10d] The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).
[E socket.cpp:500] [c10d] The server socket has failed to listen on any local network address.
Traceback (most recent call last):
  File "/opt/conda/bin/torchrun", line 8, in <module>
    sys.exit(main())
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py", line 55, in next_rendezvous
    self._store = TCPStore(  # type: ignore[call-arg]
torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:29500 (errno: 98 - Address already in use). The server socket has failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use).
`;

const PORT_EADDRINUSE = `
Initializing process group: tcp://127.0.0.1:23456
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 61, in setup
    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:23456", rank=rank, world_size=ws)
torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. port: 23456, useIpv6: false, code: -98, name: EADDRINUSE, message: address already in use
`;

const STORE_TIMEOUT = `
[I socket.cpp:480] [c10d - trace] The client socket is attempting to connect to gpu-1:29400.
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/rendezvous.py", line 175, in _create_c10d_store
    return TCPStore(
torch.distributed.DistStoreError: Timed out after 901 seconds waiting for clients. 1/2 clients joined.
`;

Deno.test("diagnoseFailure() recognises distributed failures from real log tails (table)", () => {
  const cases = [
    {
      name: "NCCL watchdog timeout under torchrun",
      input: failed(WATCHDOG_TIMEOUT),
      want: {
        cause: "nccl_timeout",
        line: 1000,
        likely: /collective \(ALLREDUCE\) timed out/,
        retry: "may_help" as const,
        fix: /NCCL_DEBUG=INFO/,
      },
    },
    {
      name: "ncclSystemError (shared memory in a container)",
      input: failed(NCCL_SYSTEM_ERROR),
      want: {
        cause: "nccl_error",
        line: 1007,
        likely: /NCCL \(the GPU communication library\) failed/,
        retry: "may_help" as const,
        fix: /--shm-size/,
      },
    },
    {
      // The final exception, not the socket warnings above it.
      name: "rendezvous port taken (errno 98)",
      input: failed(PORT_TAKEN),
      want: {
        cause: "port_in_use",
        line: 1008,
        likely: /port 29500/,
        retry: "may_help" as const,
        fix: /MASTER_PORT/,
      },
    },
    {
      name: "EADDRINUSE from init_process_group",
      input: failed(PORT_EADDRINUSE),
      want: { cause: "port_in_use", line: 1004, likely: /port 23456/, retry: "may_help" as const },
    },
    {
      name: "TCPStore timed out waiting for the other node",
      input: failed(STORE_TIMEOUT),
      want: { cause: "nccl_timeout", line: 1004, retry: "may_help" as const },
    },
  ];
  for (const { name, input, want } of cases) expectDiagnosis(name, input, want);
});

Deno.test("diagnoseFailure() quotes the what() line of an NCCL abort, not the C++ frame above it", () => {
  // https://github.com/arrival-ltd/catalyst-rl-tutorial/issues/15 (shortened)
  const d = diagnoseFailure(failed(
    `
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x1e6 (0x7f32040db6e6 in /opt/conda/envs/ml_v4/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [Rank 6] NCCL watchdog thread terminated with exception: [Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=880, OpType=BROADCAST, NumelIn=131137536, NumelOut=131137536, Timeout(ms)=1800000) ran for 1800902 milliseconds before timing out.
`,
    { exit_code: null, signal: "SIGABRT", failure_class: "SIGNAL" },
  ));
  assert.equal(d.cause_id, "nccl_timeout");
  assert.equal(d.evidence[0].line_no, 1002);
  assert.match(
    d.likely_cause,
    /\(BROADCAST\) timed out after 1800902 ms \(its timeout is 1800000 ms\)/,
  );
  assert.equal(d.retry, "may_help");
});
