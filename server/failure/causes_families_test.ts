import assert from "node:assert/strict";
import { diagnoseFailure } from "./diagnose_failure.ts";
import { buildFacts } from "./facts.ts";
import { expectDiagnosis, type Expected, failed } from "./_test_input.ts";
import type { FailureInput } from "./failure_types.ts";

// One cause in the words of several stacks, the causes added for them, and the rules that
// pick the deciding line. Log tails in the formats these libraries print.

const TF_OOM = `
2024-03-01 10:00:01.1: W tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.20GiB (rounded to 1288490240)requested by op Conv2D
Traceback (most recent call last):
  File "train.py", line 40, in <module>
    model.fit(ds, epochs=3)
tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor with shape[64,256,128,128] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc
`;

const JAX_OOM = `
  File "train.py", line 88, in train_step
    state, loss = step(state, batch)
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 8589934592 bytes.
`;

const THC_OOM = `
THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCStorage.cu line=58 error=2 : out of memory
Traceback (most recent call last):
  File "train.py", line 120, in <module>
    loss.backward()
RuntimeError: cuda runtime error (2) : out of memory at /pytorch/aten/src/THC/generic/THCStorage.cu:58
Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f2a>
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/torch/utils/data/dataloader.py", line 1328, in __del__
TypeError: 'NoneType' object is not callable
`;

const D2_NAN = `
[03/01 10:00:00 d2.utils.events]:  eta: 1:02:03  iter: 19  total_loss: 2.1
ERROR [03/01 10:00:05 d2.engine.train_loop]: Exception during training:
Traceback (most recent call last):
  File "/opt/detectron2/detectron2/engine/train_loop.py", line 149, in train
    self.run_step()
FloatingPointError: Loss became infinite or NaN at iteration=27!
loss_dict = {'loss_cls': nan, 'loss_box_reg': 0.25}
`;

const TF_CUDNN_RNN = `
2024-03-01 10:00:01.2: W tensorflow/core/framework/op_kernel.cc:1745] OP_REQUIRES failed at cudnn_rnn_ops.cc:1517 : Internal: Failed to call ThenRnnForward with model config: [rnn_mode, rnn_input_mode, rnn_direction_mode]: 2, 0, 0
tensorflow.python.framework.errors_impl.InternalError: Failed to call ThenRnnForward with model config
`;

const JAX_DNN = `
E0301 10:00:00.000000  100 cuda_dnn.cc:535] Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0.
jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: DNN library initialization failed. Look at the errors above for more details.
`;

const RDZV_STORE = `
torch.distributed.elastic.rendezvous.api.RendezvousConnectionError: The connection to the C10d store has failed. See inner exception for details.
`;

const GLOO_TIMEOUT = `
Traceback (most recent call last):
  File "train.py", line 77, in <module>
    dist.all_reduce(t)
RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] Timed out waiting 5000ms for recv operation to complete
`;

const SAVE_DISK_FULL = `
Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/torch/serialization.py", line 628, in save
    _save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)
RuntimeError: [enforce fail at inline_container.cc:603] . unexpected pos 1048640 vs 1048532
`;

const TORCHRUN_SIGKILL = `
W0301 10:00:00.000000 100 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 2001 closing signal SIGTERM
E0301 10:00:01.000000 100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) local_rank: 1 (pid: 2002) of binary: /venv/bin/python
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2024-03-01_10:00:01
  host      : node-a
  rank      : 1 (local_rank: 1)
  exitcode  : -9 (pid: 2002)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 2002
============================================================
`;

const DEEPSPEED_SIGKILL = `
[2024-03-01 10:00:00,100] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 3001
[2024-03-01 10:00:00,200] [ERROR] [launch.py:321:sigkill_handler] ['/venv/bin/python', '-u', 'train.py', '--local_rank=0'] exits with return code = -9
`;

const TORCHRUN_ABORT = `
E0301 10:00:01.000000 100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) local_rank: 0 (pid: 4001) of binary: /venv/bin/python
  exitcode  : -6 (pid: 4001)
  traceback : Signal 6 (SIGABRT) received by PID 4001
`;

const WARNING_FIRST = `
/venv/lib/python3.10/site-packages/torch/cuda/__init__.py:152: UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver
  warnings.warn(
Traceback (most recent call last):
  File "model.py", line 59, in forward
    return self.fc(x)
RuntimeError: mat1 and mat2 shapes cannot be multiplied (64x512 and 256x10)
`;

const MEMORY_WARNING_FIRST = `
[W CUDAGuardImpl.h:46] Warning: CUDA warning: out of memory (function destroyEvent)
Traceback (most recent call last):
  File "model.py", line 80, in forward
    h = torch.cat([a, b], dim=1)
RuntimeError: Sizes of tensors must match except in dimension 1. Expected size 32 but got size 16 for tensor number 1 in the list.
`;

const UNUSED_PARAMS = `
[rank1]: RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. This error indicates that your module has parameters that were not used in producing loss. You can enable unused parameter detection by passing the keyword argument \`find_unused_parameters=True\` to \`torch.nn.parallel.DistributedDataParallel\`
`;

const EMFILE = `
Traceback (most recent call last):
  File "/usr/lib/python3.10/multiprocessing/resource_sharer.py", line 145, in _serve
    send(conn, destination_pid)
OSError: [Errno 24] Too many open files
`;

const ANCDATA = `
  File "/usr/lib/python3.10/multiprocessing/reduction.py", line 164, in recvfds
    raise RuntimeError('received %d items of ancdata' %
RuntimeError: received 0 items of ancdata
`;

const GATED = `
huggingface_hub.errors.GatedRepoError: 401 Client Error. (Request ID: Root=1-6600)

Cannot access gated repo for url https://huggingface.co/meta-llama/Llama-2-7b-hf/resolve/main/config.json.
Access to model meta-llama/Llama-2-7b-hf is restricted. You must have access to it and be authenticated to access it. Please log in.
`;

const HUB_TIMEOUT_RANK1 = `
[rank1]: Traceback (most recent call last):
[rank1]:   File "/venv/lib/python3.10/site-packages/huggingface_hub/file_download.py", line 1722, in get_hf_file_metadata
[rank1]:     r = _request_wrapper(
[rank1]: requests.exceptions.ReadTimeout: (ReadTimeoutError("HTTPSConnectionPool(host='huggingface.co', port=443): Read timed out. (read timeout=10)"), '(Request ID: 7d76)')
`;

const OFFLINE = `
huggingface_hub.errors.OfflineModeIsEnabled: Cannot reach https://huggingface.co/api/models/gpt2: offline mode is enabled. To disable it, please unset the \`HF_HUB_OFFLINE\` environment variable.
`;

const PICKLE = `
  File "/usr/lib/python3.11/multiprocessing/reduction.py", line 60, in dump
    ForkingPickler(file, protocol).dump(obj)
AttributeError: Can't pickle local object 'build_loader.<locals>.<lambda>'
`;

const RECURSION = `
  File "/proj/data.py", line 40, in __getitem__
    return self[(idx + 1) % len(self)]
  [Previous line repeated 996 more times]
RecursionError: maximum recursion depth exceeded while calling a Python object
`;

const ABI = `
Traceback (most recent call last):
  File "train.py", line 3, in <module>
    import flash_attn
ImportError: /venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi
`;

const WORKER_SEGV = `
RuntimeError: DataLoader worker (pid 5123) is killed by signal: Segmentation fault.
`;

// A worker killed by SIGKILL, then the main process's reads from its local socket fail.
const WORKER_THEN_RESET = `
RuntimeError: DataLoader worker (pid 6001) is killed by signal: Killed.
Traceback (most recent call last):
  File "/usr/lib/python3.10/multiprocessing/connection.py", line 414, in _recv_bytes
    buf = self._recv(4)
  File "/usr/lib/python3.10/multiprocessing/connection.py", line 379, in _recv
    chunk = read(handle, remaining)
ConnectionResetError: [Errno 104] Connection reset by peer
`;

const TORCH_LOAD_DATA = `
Traceback (most recent call last):
  File "prepare.py", line 12, in <module>
    data = torch.load("data/train_186.pt")
  File "/venv/lib/python3.10/site-packages/torch/serialization.py", line 986, in load
    with _open_file_like(f, 'rb') as opened_file:
FileNotFoundError: [Errno 2] No such file or directory: 'data/train_186.pt'
`;

const FAULTHANDLER_ON = `
Fatal Python error: Segmentation fault

Current thread 0x00007f3c1a9b8740 (most recent call first):
  File "/proj/data.py", line 41 in __getitem__
`;

const TF_NAN_SUMMARY = `
  File "/venv/lib/python3.6/site-packages/tensorflow/python/client/session.py", line 1348, in _do_call
    raise type(e)(node_def, op, message)
tensorflow.python.framework.errors_impl.InvalidArgumentError: Nan in summary histogram for: generator/conv1/weights_0
	 [[Node: generator/conv1/weights_0 = HistogramSummary[T=DT_FLOAT](generator/conv1/weights_0/tag, generator/conv1/weights/read)]]
`;

// Ray's memory monitor: the raylet's report, and the exception the driver gets.
const RAY_RAYLET_OOM = `
(raylet) [2024-05-02 11:00:00,001 E 4242 4242] (raylet) node_manager.cc:3069: 3 Workers (tasks / actors) killed due to memory pressure (OOM), 0 Workers crashed due to other reasons at node (ID: 7f00, IP: 10.0.0.5) over the last time period.
(raylet) Refer to the documentation on how to address the out of memory issue: https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html.
`;

const RAY_TASK_OOM = `
  File "/venv/lib/python3.10/site-packages/ray/_private/worker.py", line 2755, in get
    raise value
ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.
Memory on the node (IP: 10.0.0.5, ID: 7f00) where the task (task ID: 3c00, name=preprocess, pid=901, memory used=9.80GB) was running was 60.10GB / 62.00GB (0.96), which exceeds the memory usage threshold of 0.95.
`;

const VLLM_MAX_LEN = `
INFO 05-02 11:00:00 gpu_executor.py:83] # GPU blocks: 812, # CPU blocks: 2048
ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be stored in KV cache (12992). Try increasing \`gpu_memory_utilization\` or decreasing \`max_model_len\` when initializing the engine.
`;

const XLA_FAILED_ALLOCATE = `
  File "train.py", line 61, in update
    grads = grad_fn(params, batch)
jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Failed to allocate request for 1.50GiB (1610612736B) on device ordinal 0
`;

// A C++ abort whose message is NCCL's own error string.
const NCCL_ABORT = `
terminate called after throwing an instance of 'std::runtime_error'
  what():  NCCL Error 2: unhandled system error
Aborted (core dumped)
`;

function sigkill(over: Partial<FailureInput> = {}): Partial<FailureInput> {
  return { exit_code: null, signal: "SIGKILL", failure_class: "SIGNAL", ...over };
}

Deno.test("diagnoseFailure() knows one cause in the words of several stacks (table)", () => {
  const cases: { name: string; input: FailureInput; want: Expected }[] = [
    {
      name: "TensorFlow BFC allocator OOM",
      input: failed(TF_OOM),
      want: { cause: "cuda_oom", line: 1004, retry: "fails_again", fix: /set_memory_growth/ },
    },
    {
      name: "JAX RESOURCE_EXHAUSTED",
      input: failed(JAX_OOM),
      want: { cause: "cuda_oom", line: 1002, retry: "fails_again", fix: /XLA_PYTHON_CLIENT/ },
    },
    {
      name: "THC cuda runtime error (2), then a destructor's noise",
      input: failed(THC_OOM),
      want: { cause: "cuda_oom", retry: "fails_again" },
    },
    {
      name: "detectron2 FloatingPointError",
      input: failed(D2_NAN),
      want: { cause: "nan_loss", line: 1005, retry: "fails_again" },
    },
    {
      name: "cuDNN RNN in TensorFlow's words",
      input: failed(TF_CUDNN_RNN),
      want: { cause: "cudnn_error", retry: "fails_again" },
    },
    {
      name: "cuDNN as JAX's DNN library",
      input: failed(JAX_DNN),
      want: { cause: "cudnn_error", line: 1001, retry: "fails_again" },
    },
    {
      name: "the rendezvous store unreachable",
      input: failed(RDZV_STORE),
      want: { cause: "connection_reset", line: 1000, retry: "may_help" },
    },
    {
      name: "gloo collective timeout",
      input: failed(GLOO_TIMEOUT),
      want: { cause: "nccl_timeout", line: 1003, retry: "may_help" },
    },
    {
      name: "torch.save into a full disk",
      input: failed(SAVE_DISK_FULL),
      want: { cause: "disk_full", line: 1003, retry: "fails_again" },
    },
    {
      name: "DDP unused parameters under [rank1]:",
      input: failed(UNUSED_PARAMS),
      want: {
        cause: "ddp_unused_parameters",
        retry: "fails_again",
        fix: /find_unused_parameters=True/,
      },
    },
    {
      name: "Errno 24",
      input: failed(EMFILE),
      want: { cause: "too_many_open_files", line: 1003, retry: "fails_again" },
    },
    {
      name: "received 0 items of ancdata",
      input: failed(ANCDATA),
      want: { cause: "too_many_open_files", retry: "fails_again", fix: /file_system/ },
    },
    {
      name: "gated repo (401)",
      input: failed(GATED),
      want: {
        cause: "hub_auth",
        retry: "fails_again",
        likely: /"meta-llama\/Llama-2-7b-hf"/,
        fix: /secret_env/,
      },
    },
    {
      name: "hub read timeout on one rank",
      input: failed(HUB_TIMEOUT_RANK1),
      want: { cause: "hub_unreachable", retry: "may_help", likely: /from rank 1/ },
    },
    {
      name: "DataLoader pickling",
      input: failed(PICKLE),
      want: { cause: "dataloader_pickling", line: 1002, retry: "fails_again" },
    },
    {
      name: "RecursionError",
      input: failed(RECURSION),
      want: { cause: "recursion_error", line: 1003, retry: "fails_again" },
    },
    {
      name: "undefined symbol on import",
      input: failed(ABI),
      want: { cause: "abi_mismatch", line: 1003, retry: "fails_again", fix: /Rebuild/ },
    },
    {
      name: "NaN refused by TensorFlow's histogram summary",
      input: failed(TF_NAN_SUMMARY),
      want: { cause: "nan_loss", line: 1002, retry: "fails_again" },
    },
    {
      name: "Ray's memory monitor (the raylet's report)",
      input: failed(RAY_RAYLET_OOM),
      want: { cause: "host_oom_killed", line: 1000, retry: "fails_again", likely: /Ray/ },
    },
    {
      name: "Ray's OutOfMemoryError is host memory, not the GPU's",
      input: failed(RAY_TASK_OOM),
      want: { cause: "host_oom_killed", line: 1002, retry: "fails_again", fix: /memory=/ },
    },
    {
      name: "vLLM: max_model_len does not fit the KV cache",
      input: failed(VLLM_MAX_LEN),
      want: { cause: "cuda_oom", line: 1001, retry: "fails_again", fix: /max_model_len/ },
    },
    {
      name: "XLA: Failed to allocate request",
      input: failed(XLA_FAILED_ALLOCATE),
      want: { cause: "cuda_oom", line: 1002, retry: "fails_again", fix: /XLA_PYTHON_CLIENT/ },
    },
    {
      name: "a worker that crashed (SIGSEGV) fails again",
      input: failed(WORKER_SEGV),
      want: { cause: "dataloader_worker_killed", line: 1000, retry: "may_help" },
    },
  ];
  for (const { name, input, want } of cases) expectDiagnosis(name, input, want);
  // The entry's verdict is "may help"; a worker that crashed on its own overrides it.
  const segv = diagnoseFailure(failed(WORKER_SEGV));
  assert.equal(segv.retry, "fails_again");
  // An abort is NCCL's own error string's consequence: the NCCL error decides, and is retried.
  const nccl = diagnoseFailure(
    failed(NCCL_ABORT, { exit_code: null, signal: "SIGABRT", failure_class: "SIGNAL" }),
  );
  assert.deepEqual([nccl.cause_id, nccl.retry], ["nccl_error", "may_help"]);
  const offline = diagnoseFailure(failed(OFFLINE));
  assert.deepEqual([offline.cause_id, offline.retry], ["hub_unreachable", "fails_again"]);
});

Deno.test("diagnoseFailure() decodes a launcher's report of its failing child and names it", () => {
  const torchrun = expectDiagnosis("torchrun -9", failed(TORCHRUN_SIGKILL), {
    cause: "killed",
    retry: "may_help",
  });
  assert.match(
    torchrun.likely_cause,
    /^The training process of rank 1 \(local rank 1, pid 2002\) was killed by SIGKILL/,
  );
  assert.match(torchrun.evidence[0].detail, /Signal 9 \(SIGKILL\) received by PID 2002/);
  // DeepSpeed passes the child's -9 to sys.exit(): the launcher exits 247.
  const ds = expectDiagnosis("deepspeed 247", failed(DEEPSPEED_SIGKILL, { exit_code: 247 }), {
    cause: "killed",
    line: 1001,
    retry: "may_help",
  });
  assert.match(ds.likely_cause, /^The training process of local rank 0 was killed by SIGKILL/);
  assert.ok(
    ds.evidence.some((e) => /^exit code 247 \(256 - 9: .*killed by SIGKILL\)$/.test(e.detail)),
  );
  expectDiagnosis("torchrun -6", failed(TORCHRUN_ABORT), {
    cause: "aborted",
    likely: /^The training process of local rank 0 \(pid 4001\) aborted/,
    retry: "fails_again",
  });
  const facts = buildFacts(failed(TORCHRUN_SIGKILL));
  assert.deepEqual(
    [facts.child?.signal, facts.child?.rank, facts.child?.localRank, facts.child?.pid],
    ["SIGKILL", 1, 1, 2002],
  );
});

Deno.test("diagnoseFailure() knows CUDA kernel faults and allocations in other words", () => {
  const cases: [string, string][] = [
    [
      "jaxlib.xla_extension.XlaRuntimeError: INTERNAL: CUDA_ERROR_ILLEGAL_ADDRESS",
      "cuda_device_error",
    ],
    ["RuntimeError: CUDA error: the launch timed out and was terminated", "cuda_device_error"],
    ["RuntimeError: CUDA driver error: out of memory", "cuda_oom"],
  ];
  for (const [log, want] of cases) {
    const d = diagnoseFailure(failed(log));
    assert.deepEqual([d.cause_id, d.retry], [want, "fails_again"], log);
  }
});

Deno.test("diagnoseFailure() lets the final exception outrank a louder earlier warning", () => {
  expectDiagnosis("driver warning, then a shape error", failed(WARNING_FIRST), {
    cause: "shape_mismatch",
    line: 1005,
    retry: "fails_again",
  });
  expectDiagnosis("memory warning, then a shape error", failed(MEMORY_WARNING_FIRST), {
    cause: "shape_mismatch",
    line: 1004,
    retry: "fails_again",
  });
  // Nothing else failed: the warning's cause is the answer.
  const alone = diagnoseFailure(failed(WARNING_FIRST.split("Traceback")[0]));
  assert.equal(alone.cause_id, "cuda_version_mismatch");
});

Deno.test("diagnoseFailure() words what it knows: worker deaths, torch.load, faulthandler, SIGINT", () => {
  // A dead worker's local socket is not the network.
  const reset = diagnoseFailure(failed(WORKER_THEN_RESET));
  assert.deepEqual([reset.cause_id, reset.retry], ["dataloader_worker_killed", "may_help"]);
  assert.ok(!/network/i.test(reset.likely_cause));
  // The counter rose: the OOM killer, in a cgroup's words.
  const oom = diagnoseFailure(failed(WORKER_THEN_RESET, { failure_class: "OOM" }));
  assert.equal(oom.cause_id, "host_oom_killed");
  assert.doesNotMatch(oom.likely_cause, /host ran out of RAM/);
  // A file read with torch.load is not called a checkpoint unless its name says so.
  const load = diagnoseFailure(failed(TORCH_LOAD_DATA));
  assert.equal(load.cause_id, "file_not_found");
  assert.match(
    load.likely_cause,
    /^The file "data\/train_186\.pt" does not exist on the node \(read with torch\.load\)$/,
  );
  // faulthandler was on: point at its stack instead of suggesting it.
  const segv = diagnoseFailure(failed(FAULTHANDLER_ON, sigkill({ signal: "SIGSEGV" })));
  assert.equal(segv.cause_id, "segfault");
  assert.ok(segv.suggested_fixes.some((f) => /faulthandler was on/.test(f)));
  assert.ok(!segv.suggested_fixes.some((f) => /PYTHONFAULTHANDLER=1/.test(f)));
  // A SIGINT run ends FAILED: its card must not say that nothing failed. A job has no
  // terminal and a gpuctl cancel is recorded as such, so the interrupt came from outside the
  // job (a kill -INT, a shutdown): retried like a SIGTERM.
  const sigint = diagnoseFailure(failed("step 10", sigkill({ signal: "SIGINT" })));
  assert.equal(sigint.cause_id, "interrupted");
  assert.doesNotMatch(sigint.retry_advice, /^Nothing failed/);
  assert.equal(sigint.retry, "may_help");
  assert.match(sigint.retry_advice, /gpuctl job cancel/);
  assert.match(sigint.likely_cause, /ended FAILED/);
});

Deno.test("diagnoseFailure() decides an unknown error that reads as a network failure as transient", () => {
  const d = diagnoseFailure(failed(`
Traceback (most recent call last):
  File "fetch.py", line 9, in <module>
    sock.connect((host, port))
OSError: [Errno 113] connect failed: Connection refused by 10.0.0.7:5000
`));
  // No specific pattern knows it; the family second chance names the network by its words.
  assert.deepEqual([d.cause_id, d.retry], ["connection_reset", "may_help"]);
  assert.match(d.likely_cause, /matched by family: "Connection refused"/);
  const plain = diagnoseFailure(failed("init: connection timed out after 30s", { exit_code: 2 }));
  assert.deepEqual([plain.cause_id, plain.retry], ["connection_reset", "may_help"]);
  const other = diagnoseFailure(failed("usage: train.py [-h]", { exit_code: 2 }));
  assert.equal(other.retry, "fails_again");
});

Deno.test("diagnoseFailure() always decides on a retry", () => {
  const inputs: FailureInput[] = [
    failed("", { exit_code: 3 }),
    failed("some output", { exit_code: 2 }),
    failed("", { exit_code: null, signal: "SIGUSR1", failure_class: "SIGNAL" }),
    failed("", { exit_code: null, signal: null, failure_class: null }),
    failed("Aborted (core dumped)", { exit_code: 134 }),
  ];
  for (const input of inputs) {
    const d = diagnoseFailure(input);
    assert.notEqual(d.retry, "unknown", `${d.cause_id}: ${d.retry_advice}`);
  }
});

Deno.test("diagnoseFailure() reads start-up and launcher failures in their own words", () => {
  const vllm = expectDiagnosis(
    "vLLM free memory",
    failed(
      "(EngineCore_DP0 pid=7) ERROR 01-02 03:04:05 [core.py:700] ValueError: Free memory on device cuda:0 (5.1/23.6 GiB) on startup is less than desired GPU memory utilization (0.9, 21.2 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.",
    ),
    {
      cause: "cuda_oom",
      retry: "fails_again",
      likely: /gpu_memory_utilization/,
      fix: /Lower `gpu_memory_utilization`/,
    },
  );
  assert.equal(vllm.retry, "fails_again");

  const shm = expectDiagnosis(
    "NCCL shared memory",
    failed(`
host:11:22 [0] misc/shmutils.cc:112 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-abc (size 9637888)
host:11:22 [0] NCCL INFO transport/shm.cc:114 -> 2
RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:784, unhandled system error, NCCL version 2.7.8
`),
    { cause: "shm_exhausted", retry: "fails_again", line: 1000, fix: /NCCL_SHM_DISABLE/ },
  );
  assert.equal(shm.retry, "fails_again");

  const duplicate = diagnoseFailure(failed(`
host:1:2 [0] init.cc:521 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 40
RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:957, invalid usage, NCCL version 2.10.3
`));
  assert.equal(duplicate.cause_id, "nccl_error");
  assert.equal(duplicate.retry, "fails_again", duplicate.likely_cause);
  assert.match(duplicate.likely_cause, /same GPU/);
  assert.match(duplicate.retry_advice, /does not requeue/);
  // Without the duplicate, an NCCL error stays transient.
  assert.equal(
    diagnoseFailure(
      failed("RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:957, unhandled system error"),
    ).retry,
    "may_help",
  );

  expectDiagnosis(
    "missing torch library",
    failed(`
  File "/opt/ext/layers.py", line 7, in <module>
    from ext import _C
ImportError: libc10_cuda.so: cannot open shared object file: No such file or directory
`),
    { cause: "abi_mismatch", retry: "fails_again", line: 1002 },
  );
  // Another library's missing file is no ABI mismatch of torch's.
  assert.notEqual(
    diagnoseFailure(
      failed(
        "ImportError: libcudart.so.10.1: cannot open shared object file: No such file or directory",
      ),
    ).cause_id,
    "abi_mismatch",
  );

  expectDiagnosis(
    "assertion lines only",
    failed(`
/src/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [3,0,0] Assertion \`t >= 0 && t < n_classes\` failed.
/src/aten/src/ATen/native/cuda/Loss.cu:240: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [4,0,0] Assertion \`t >= 0 && t < n_classes\` failed.
`),
    { cause: "cuda_device_error", retry: "fails_again", line: 1000 },
  );

  expectDiagnosis(
    "write(): fd",
    failed(`
  File "/venv/lib/python3.7/site-packages/torch/serialization.py", line 297, in _save
    serialized_storages[key]._write_file(f, _should_read_directly(f))
RuntimeError: write(): fd 12 failed with Input/output error
`),
    { cause: "disk_full", retry: "fails_again", line: 1002 },
  );

  expectDiagnosis(
    "traceback cut inside a frame's path",
    failed(`
/trainer/base.py", line 269, in __init__
    super().__init__(
TypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'
`),
    { cause: "python_exception", retry: "fails_again", line: 1002 },
  );
});

Deno.test("diagnoseFailure() decodes the exit status a launcher's CalledProcessError reports", () => {
  const launcher = (status: string) => `
Traceback (most recent call last):
  File "/venv/lib/python3.10/site-packages/accelerate/commands/launch.py", line 637, in simple_launcher
    raise subprocess.CalledProcessError(returncode=process.returncode, cmd=cmd)
subprocess.CalledProcessError: Command '['/venv/bin/python', 'train.py']' returned non-zero exit status ${status}.
`;
  for (const status of ["-11", "139", "3221225477"]) {
    expectDiagnosis(`status ${status}`, failed(launcher(status)), {
      cause: "segfault",
      retry: "fails_again",
    });
  }
  // A plain status says only that the child failed: its own error is not in the log.
  expectDiagnosis("status 1", failed(launcher("1")), {
    cause: "nonzero_exit",
    retry: "fails_again",
  });
  expectDiagnosis("status -9", failed(launcher("-9")), { cause: "killed", retry: "may_help" });
});

Deno.test("diagnoseFailure() reads a bare exception line, JAX's library checks, TPU memory and nohup", () => {
  expectDiagnosis(
    "bare exception",
    failed(
      "pytorch_lightning.utilities.exceptions.MisconfigurationException: No `val_dataloader()` method defined.",
    ),
    { cause: "python_exception", retry: "fails_again", line: 1000 },
  );
  // A bare line that only reports a network failure stays transient.
  assert.equal(
    diagnoseFailure(failed("SomeClientError: connection refused by 10.0.0.2:8080")).retry,
    "may_help",
  );
  // A line that is no exception leaves the card on the exit code.
  assert.equal(diagnoseFailure(failed("training stopped early")).cause_id, "nonzero_exit");

  expectDiagnosis(
    "JAX and cuDNN",
    failed(
      "CUDA backend failed to initialize: Found cuDNN version 8700, but JAX was built against version 8907, which is newer.",
    ),
    { cause: "cuda_version_mismatch", retry: "fails_again", likely: /JAX/, fix: /jax\[cuda12\]/ },
  );
  expectDiagnosis(
    "TPU memory",
    failed(
      "RuntimeError: Bad StatusOr access: RESOURCE_EXHAUSTED: Error allocating device buffer: Attempting to allocate 2.00G. That was not possible. There are 1.10G free.; (0x0x0_HBM0)",
    ),
    { cause: "cuda_oom", retry: "fails_again", fix: /TPU/ },
  );
  expectDiagnosis(
    "logits and labels",
    failed(
      "InvalidArgumentError: logits and labels must have the same first dimension, got logits shape [8,10] and labels shape [80]",
    ),
    { cause: "shape_mismatch", retry: "fails_again" },
  );
  expectDiagnosis(
    "nohup",
    failed("nohup: failed to run command 'deepspeed': No such file or directory", {
      exit_code: 127,
    }),
    { cause: "command_not_found", retry: "fails_again", likely: /"deepspeed"/ },
  );
});

Deno.test("diagnoseFailure() reads TensorFlow and old PyTorch checkpoints, JAX without a GPU, a privileged port and JAX's tracer errors", () => {
  expectDiagnosis(
    "TensorFlow key",
    failed(`
2024-03-01 10:00:00.1: W tensorflow/core/framework/op_kernel.cc:1651] OP_REQUIRES failed at save_restore_v2_ops.cc:184 : Not found: Key head/dense/kernel not found in checkpoint
tensorflow.python.framework.errors_impl.NotFoundError: Key head/dense/kernel not found in checkpoint
`),
    {
      cause: "state_dict_mismatch",
      retry: "fails_again",
      likely: /"head\/dense\/kernel"/,
      fix: /expect_partial/,
    },
  );
  expectDiagnosis(
    "TensorFlow restore",
    failed(
      "NotFoundError: Restoring from checkpoint failed. This is most likely due to a Variable name or other graph key that is missing from the checkpoint.",
    ),
    { cause: "state_dict_mismatch", retry: "fails_again" },
  );
  expectDiagnosis(
    "PyTorch 0.3 key",
    failed(`
Traceback (most recent call last):
  File "test.py", line 12, in <module>
    net.load_state_dict(torch.load("best.pth"))
KeyError: 'unexpected key "module.fc.weight" in state_dict'
`),
    { cause: "state_dict_mismatch", retry: "fails_again", line: 1003, fix: /strip the `module\.`/ },
  );
  // A program's own note that something is not in a checkpoint names no key of a graph.
  expectDiagnosis(
    "own words",
    failed(`
UserWarning: best loss not found in checkpoint, starting from infinity
ValueError: learning rate must be positive
`),
    { cause: "python_exception", retry: "fails_again" },
  );

  expectDiagnosis(
    "JAX without a GPU",
    failed(`
2024-03-01 10:00:00.2: E external/xla/xla/stream_executor/cuda/cuda_driver.cc:152] failed call to cuInit: INTERNAL: CUDA error: Failed call to cuInit: CUDA_ERROR_SYSTEM_NOT_READY: system not yet initialized
jaxlib.xla_extension.XlaRuntimeError: FAILED_PRECONDITION: No visible GPU devices.
`),
    {
      cause: "no_cuda_device",
      retry: "fails_again",
      likely: /CUDA_ERROR_SYSTEM_NOT_READY/,
      fix: /fabricmanager/,
    },
  );

  const bind = (errno: string) => `
[W socket.cpp:426] [c10d] The server socket has failed to bind to 0.0.0.0:443 (${errno}).
[E socket.cpp:462] [c10d] The server socket has failed to listen on any local network address.
RuntimeError: The server socket has failed to listen on any local network address. The server socket has failed to bind to [::]:443 (${errno}).
`;
  expectDiagnosis("privileged port", failed(bind("errno: 13 - Permission denied")), {
    cause: "permission_denied",
    retry: "fails_again",
    likely: /port 443/,
    fix: /1024/,
  });
  expectDiagnosis("taken port", failed(bind("errno: 98 - Address already in use")), {
    cause: "port_in_use",
    retry: "may_help",
  });

  expectDiagnosis(
    "JAX tracer error",
    failed(`
TracerBoolConversionError: Attempted boolean conversion of traced array with shape bool[].
The error occurred while tracing the function loss_fn at model.py:42 for jit. This value became a tracer due to JAX operations on these lines:
  operation a:bool[] = gt b c
`),
    { cause: "python_exception", retry: "fails_again", likely: /TracerBoolConversionError/ },
  );
  // The explanation alone, its exception cut from the log, leaves the card on the exit code.
  assert.equal(
    diagnoseFailure(
      failed("The error occurred while tracing the function loss_fn at model.py:42 for jit."),
    ).cause_id,
    "nonzero_exit",
  );
});
