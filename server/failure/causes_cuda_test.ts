import assert from "node:assert/strict";
import { diagnoseFailure } from "./diagnose_failure.ts";
import { expectDiagnosis, failed } from "./_test_input.ts";

const TORCH_OOM = `
Epoch 0:  12%|█▏        | 118/1000 [00:41<05:09,  2.85it/s, loss=2.31]
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 212, in <module>
    main()
  File "/home/ana/proj/train.py", line 187, in main
    loss = model(**batch).loss
           ^^^^^^^^^^^^^^
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1518, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/home/ana/.venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", line 412, in forward
    attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free. Including non-PyTorch memory, this process has 78.08 GiB memory in use. Of the allocated memory 74.32 GiB is allocated by PyTorch, and 2.91 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.
`;

const CUBLAS_OOM = `
[rank0]: Traceback (most recent call last):
[rank0]:   File "/workspace/finetune.py", line 96, in <module>
[rank0]:     out = model(x)
[rank0]:   File "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/linear.py", line 116, in forward
[rank0]:     return F.linear(input, self.weight, self.bias)
[rank0]: RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling \`cublasCreate(handle)\`
`;

const ALLOC_FAILED = `
2024-05-02 10:14:07.118 | INFO | step=200 loss=1.872
Traceback (most recent call last):
  File "/srv/jax_train/main.py", line 54, in <module>
    state = train_step(state, batch)
jaxlib.xla_extension.XlaRuntimeError: INTERNAL: cudaErrorMemoryAllocation: out of memory
`;

const DRIVER_TOO_OLD = `
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 30, in <module>
    model = Net().to("cuda")
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 302, in _lazy_init
    torch._C._cuda_init()
RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org to install a PyTorch version that has been compiled with your version of the CUDA driver.
`;

const RUNTIME_MISMATCH = `
2024-03-11 08:00:01.532 W external/xla/xla/stream_executor/cuda/cuda_driver.cc:1505] failed call to cuInit
RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
`;

const NO_DEVICE = `
Using device: cuda
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 44, in <module>
    model.cuda()
  File "/home/ana/.venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 298, in _lazy_init
    torch._C._cuda_init()
RuntimeError: No CUDA GPUs are available
`;

const CPU_WHEEL = `
Traceback (most recent call last):
  File "/home/ana/proj/eval.py", line 12, in <module>
    ckpt = torch.load("best.pt")
  File "/home/ana/.venv/lib/python3.10/site-packages/torch/serialization.py", line 166, in _cuda_deserialize
    device = validate_cuda_device(location)
  File "/home/ana/.venv/lib/python3.10/site-packages/torch/serialization.py", line 150, in validate_cuda_device
    raise RuntimeError('Attempting to deserialize object on a CUDA '
RuntimeError: Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False. If you are running on a CPU-only machine, please use torch.load with map_location=torch.device('cpu') to map your storages to the CPU.
`;

const BAD_ORDINAL = `
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 19, in <module>
    torch.cuda.set_device(3)
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 408, in set_device
    torch._C._cuda_setDevice(device)
RuntimeError: CUDA error: invalid device ordinal
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
`;

const DEVICE_ASSERT = `
../aten/src/ATen/native/cuda/Loss.cu:250: nll_loss_forward_reduce_cuda_kernel_2d: block: [0,0,0], thread: [5,0,0] Assertion \`t >= 0 && t < n_classes\` failed.
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 120, in <module>
    loss = criterion(logits, labels)
  File "/home/ana/.venv/lib/python3.10/site-packages/torch/nn/functional.py", line 3059, in cross_entropy
    return torch._C._nn.cross_entropy_loss(input, target, weight, _Reduction.get_enum(reduction), ignore_index, label_smoothing)
RuntimeError: CUDA error: device-side assert triggered
Compile with \`TORCH_USE_CUDA_DSA\` to enable device-side assertions.
`;

Deno.test("diagnoseFailure() recognises CUDA failures from real log tails (table)", () => {
  const cases = [
    {
      name: "torch.OutOfMemoryError",
      input: failed(TORCH_OOM, { failure_class: "OOM" }),
      want: {
        cause: "cuda_oom",
        line: 1011,
        likely: /^The GPU ran out of memory on GPU 0 while trying to allocate 2\.00 GiB/,
        retry: "fails_again" as const,
        minConfidence: 0.95,
        fix: /PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True/,
      },
    },
    {
      name: "CUBLAS_STATUS_ALLOC_FAILED under torchrun's [rank0]: prefix",
      input: failed(CUBLAS_OOM),
      want: { cause: "cuda_oom", line: 1005, retry: "fails_again" as const, fix: /batch size/ },
    },
    {
      name: "cudaErrorMemoryAllocation from JAX",
      input: failed(ALLOC_FAILED),
      want: { cause: "cuda_oom", line: 1004, retry: "fails_again" as const },
    },
    {
      name: "driver too old",
      input: failed(DRIVER_TOO_OLD),
      want: {
        cause: "cuda_version_mismatch",
        line: 1005,
        likely: /found version 11040/,
        retry: "fails_again" as const,
        fix: /nvidia-smi/,
      },
    },
    {
      name: "driver insufficient for runtime",
      input: failed(RUNTIME_MISMATCH),
      want: { cause: "cuda_version_mismatch", line: 1001, retry: "fails_again" as const },
    },
    {
      name: "no GPUs visible",
      input: failed(NO_DEVICE),
      want: {
        cause: "no_cuda_device",
        line: 1006,
        retry: "fails_again" as const,
        fix: /CUDA_VISIBLE_DEVICES/,
      },
    },
    {
      name: "torch.cuda.is_available() is False",
      input: failed(CPU_WHEEL),
      want: { cause: "no_cuda_device", line: 1007, retry: "fails_again" as const },
    },
    {
      name: "a host GPU index instead of the job's",
      input: failed(BAD_ORDINAL),
      want: {
        cause: "no_cuda_device",
        line: 1005,
        likely: /GPU index the job cannot see/,
        retry: "fails_again" as const,
        fix: /renumbered from 0/,
      },
    },
    {
      name: "device-side assert",
      input: failed(DEVICE_ASSERT),
      want: {
        cause: "cuda_device_error",
        line: 1006,
        retry: "fails_again" as const,
        fix: /CUDA_LAUNCH_BLOCKING=1/,
      },
    },
  ];
  for (const { name, input, want } of cases) expectDiagnosis(name, input, want);
});

Deno.test("diagnoseFailure() lists every CUDA OOM fix the runbook names", () => {
  const d = diagnoseFailure(failed(TORCH_OOM));
  for (
    const fix of [
      /Halve the batch size/,
      /gradient accumulation/,
      /checkpointing/,
      /bf16/,
      /expandable_segments/,
    ]
  ) {
    assert.ok(d.suggested_fixes.some((f) => fix.test(f)), String(fix));
  }
});

Deno.test("diagnoseFailure() takes a CUDA OOM from the agent's OOM event when the log lost it", () => {
  const d = diagnoseFailure(failed("", {
    failure_class: "OOM",
    events: [{ type: "OOM", message: "CUDA out of memory detected in the last log lines" }],
  }));
  assert.equal(d.cause_id, "cuda_oom");
  assert.equal(d.evidence[0].kind, "event");
});

// Marian's unknown CUDA error after 51,000 updates (mozilla/translations#1002), and the same
// error class at start-up: a thrust abort on `invalid device function` (dirtybit/OpenTLD#6).
const UNKNOWN_AFTER_TRAINING = `
[task 2025-01-21T16:25:07.208Z] [2025-01-21 16:25:07] [valid] Ep. 1 : Up. 50000 : bleu-detok : 26.4729 : new best
[task 2025-01-21T16:30:34.200Z] [2025-01-21 16:30:34] Ep. 1 : Up. 51000 : Sen. 77,303,338 : Cost 1.41794586 : Time 370.55s : 97447.45 words/s : gNorm 0.5275
[task 2025-01-21T16:30:37.188Z] [2025-01-21 16:30:37] Error: CUDA error 999 'unknown error' - /builds/worker/fetches/marian-source/src/tensors/gpu/algorithm.cu:54: cudaStreamSynchronize(0)
`;
const INVALID_DEVICE_FUNCTION_AT_START = `
terminate called after throwing an instance of 'thrust::system::system_error'
  what():  function_attributes(): after cudaFuncGetAttributes: invalid device function
`;
// relion#149: the first iteration is still start-up, not training under way.
const INVALID_DEVICE_FUNCTION_FIRST_ITERATION = `
 Expectation iteration 1
000/??? sec ~~(,_,">                                                          [oo]

KERNEL_ERROR: invalid device function in /sw/relion/2.0beta-git/src/gpu_utils/cuda_ml_optimiser.cu at line 273 (error-code 8)
`;

Deno.test("diagnoseFailure() reads unknown CUDA errors and invalid device functions as kernel errors, transient only after training was under way", () => {
  const late = expectDiagnosis(
    "unknown error after 51000 updates",
    failed(UNKNOWN_AFTER_TRAINING, {
      exit_code: null,
      signal: "SIGABRT",
      failure_class: "SIGNAL",
    }),
    { cause: "cuda_device_error", line: 1002, retry: "fails_again" },
  );
  assert.equal(late.retry, "may_help");
  assert.match(
    late.retry_advice,
    /^A retry may help: the error struck a run that had been training/,
  );
  assert.ok(
    late.evidence.some((e) => e.line_no === 1001 && /training was under way/.test(e.detail)),
  );
  const start = expectDiagnosis(
    "thrust abort at start-up",
    failed(INVALID_DEVICE_FUNCTION_AT_START, { exit_code: 134, failure_class: "SIGNAL" }),
    { cause: "cuda_device_error", line: 1001, retry: "fails_again" },
  );
  assert.equal(start.retry, "fails_again");
  const first = diagnoseFailure(failed(INVALID_DEVICE_FUNCTION_FIRST_ITERATION));
  assert.deepEqual([first.cause_id, first.retry], ["cuda_device_error", "fails_again"]);
});

Deno.test("diagnoseFailure() reads the runtime's 802 (fabric manager not running) as no usable GPU", () => {
  const d = expectDiagnosis(
    "Error 802",
    failed(
      "RuntimeError: Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions " +
        "before calling NumCudaDevices() that might have already set an error? Error 802: system " +
        "not yet initialized",
    ),
    { cause: "no_cuda_device", line: 1000, retry: "fails_again", fix: /fabric manager/ },
  );
  assert.equal(d.retry, "fails_again");
});

// An old JAX's report broken inside its message (the line break after "Out").
const XLA_OOM_SPLIT = `
[1] 2019-06-13 01:17:08.886805: E external/org_tensorflow/tensorflow/compiler/xla/python/local_client.cc:672] Execution of replica 0 failed: Resource exhausted: Out
of memory while trying to allocate 5520758552 bytes.
`;

Deno.test("diagnoseFailure() reads XLA's out-of-memory report split over two lines", () => {
  expectDiagnosis("split XLA OOM", failed(XLA_OOM_SPLIT), {
    cause: "cuda_oom",
    line: 1000,
    retry: "fails_again",
  });
});

Deno.test("diagnoseFailure() reads Lightning's 'No supported gpu backend found!' as no usable GPU", () => {
  // microsoft/mattergen#217, through Hydra's report of the Trainer it could not build.
  const log = `
Error in call to target 'pytorch_lightning.trainer.trainer.Trainer':
MisconfigurationException('No supported gpu backend found!')
full_key: trainer
`;
  expectDiagnosis("Lightning", failed(log), {
    cause: "no_cuda_device",
    line: 1001,
    retry: "fails_again",
  });
});

Deno.test("diagnoseFailure() counts a tqdm bar cut before its counters as training under way, but not a bar of start-up work", () => {
  const error = "RuntimeError: CUDA error: unknown error";
  const late = diagnoseFailure(failed(`Fine-tuning:\n 42%|████████▍           \n${error}`));
  assert.deepEqual([late.cause_id, late.retry], ["cuda_device_error", "may_help"]);
  assert.ok(
    late.evidence.some((e) => e.line_no === 1001 && /training was under way/.test(e.detail)),
  );
  const launch = diagnoseFailure(
    failed(` 7%|▋         \nRuntimeError: CUDA error: unspecified launch failure`),
  );
  assert.equal(launch.retry, "may_help");
  // An epoch's iteration counter in the first epoch counts; its first iteration does not.
  const counter = diagnoseFailure(failed(`Epoch: [0][ 340/5005]\tLoss 4.1 (4.3)\n${error}`));
  assert.equal(counter.retry, "may_help");
  const first = diagnoseFailure(failed(`Epoch: [0][   1/5005]\tLoss 6.9 (6.9)\n${error}`));
  assert.equal(first.retry, "fails_again");
  // At 0 % nothing has run yet; at 100 % the bar may be a finished loading step.
  for (
    const bar of [
      "  0%|          ",
      "100%|██████████",
      "Loading checkpoint shards:  50%|█████     ",
      "Downloading model.safetensors:  65%|██████▌   ",
      "Map:  40%|████      ",
      "Sanity Checking DataLoader 0:  50%|█████     ",
      " 30%|███       | 1.20G/4.00G [00:10<00:23, 120MB/s]",
    ]
  ) {
    const d = diagnoseFailure(failed(`${bar}\n${error}`));
    assert.deepEqual([d.cause_id, d.retry], ["cuda_device_error", "fails_again"], bar);
  }
});

Deno.test("diagnoseFailure() reads Apple Metal's and MPS's out of memory as the GPU's memory", () => {
  const metal = expectDiagnosis(
    "MLX on Metal",
    failed(
      "Iter 40: Train loss 1.723, It/sec 0.739, Peak mem 32.138 GB\n" +
        "libc++abi: terminating due to uncaught exception of type std::runtime_error: [METAL] " +
        "Command buffer execution failed: Insufficient Memory " +
        "(00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)",
      { exit_code: null, signal: "SIGABRT", failure_class: "SIGNAL" },
    ),
    {
      cause: "cuda_oom",
      line: 1001,
      retry: "fails_again",
      likely: /Apple silicon, Metal/,
      fix: /unified memory|shares the machine's memory/,
    },
  );
  assert.doesNotMatch(metal.likely_cause, /CUDA/);
  expectDiagnosis(
    "ggml on Metal",
    failed("error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)"),
    { cause: "cuda_oom", line: 1000, retry: "fails_again" },
  );
  expectDiagnosis(
    "PyTorch MPS",
    failed(
      "RuntimeError: MPS backend out of memory (MPS allocated: 8.89 GB, other allocations: " +
        "172.98 MB, max allowed: 9.07 GB). Tried to allocate 6.25 MB on private pool.",
    ),
    {
      cause: "cuda_oom",
      line: 1000,
      retry: "fails_again",
      fix: /PYTORCH_MPS_HIGH_WATERMARK_RATIO/,
    },
  );
});

Deno.test("diagnoseFailure() reads a CUDA library missing on import as a CUDA install that does not fit the build", () => {
  for (
    const line of [
      "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory",
      "OSError: libcusparse.so.11: cannot open shared object file: No such file or directory",
      "ImportError: libnvJitLink.so.12: cannot open shared object file: No such file or directory",
      "libcublasLt.so.11: cannot open shared object file: No such file or directory",
    ]
  ) {
    const log = `Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n` +
      `    import torch\n${line}`;
    expectDiagnosis(line, failed(log), {
      cause: "cuda_version_mismatch",
      line: 1003,
      retry: "fails_again",
      likely: /CUDA library the package was built against cannot be loaded \(lib\w+\.so/,
      fix: /LD_LIBRARY_PATH/,
    });
  }
  // cuDNN's own library is cuDNN's; a library of PyTorch itself is an extension's ABI; the
  // driver's own library is no GPU driver; another library stays a missing library.
  expectDiagnosis(
    "cuDNN",
    failed("ImportError: libcudnn.so.8: cannot open shared object file: No such file or directory"),
    { cause: "cudnn_error", line: 1000, retry: "fails_again", likely: /libcudnn\.so\.8/ },
  );
  expectDiagnosis(
    "libc10_cuda",
    failed(
      "ImportError: libc10_cuda.so: cannot open shared object file: No such file or directory",
    ),
    { cause: "abi_mismatch", retry: "fails_again" },
  );
  expectDiagnosis(
    "libGL",
    failed("ImportError: libGL.so.1: cannot open shared object file: No such file or directory"),
    { cause: "module_not_found", retry: "fails_again" },
  );
  // TensorFlow's warning names a library it can run without: not the cause.
  const warned = diagnoseFailure(failed(
    "W tensorflow/stream_executor/platform/default/dso_loader.cc:59] Could not load dynamic " +
      "library 'libcudart.so.10.1'; dlerror: libcudart.so.10.1: cannot open shared object file: " +
      "No such file or directory\nValueError: the data has no column 'label'",
  ));
  assert.notEqual(warned.cause_id, "cuda_version_mismatch");
});
