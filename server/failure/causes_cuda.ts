/**
 * GPU causes: CUDA out of memory (in PyTorch's, TensorFlow's, XLA's and vLLM's words), CUDA
 * version mismatch, no CUDA device, device-side errors, cuDNN errors, GPU hardware faults.
 */
import {
  capped,
  type CauseEntry,
  excerpt,
  exitCodeEvidence,
  failureClassEvidence,
  findLine,
  type LineHit,
  logEvidence,
  present,
} from "./cause.ts";
import type { FailureFacts, LogLine } from "./facts.ts";
import type { Evidence } from "./failure_types.ts";
import { RAY_MEMORY_MONITOR } from "./causes_process.ts";

// One cause, many phrasings: PyTorch (and its THC-era `cuda runtime error (2)`), cuBLAS and
// the CUDA runtime, TensorFlow's BFC allocator (`OOM when allocating tensor`,
// `ResourceExhaustedError`), JAX/XLA (`RESOURCE_EXHAUSTED: Out of memory`, `Failed to allocate
// request`), ROCm, Apple's MPS and Metal, and a vLLM engine with no memory left for its KV
// cache (or too little for one sequence of `max_model_len`, or less free memory at start-up
// than its `gpu_memory_utilization` asks for). Ray's `OutOfMemoryError` is host memory: not this.
const CUDA_OOM = [
  /CUDA out of memory/i,
  /OutOfMemoryError/,
  /CUBLAS_STATUS_ALLOC_FAILED/,
  /cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY/,
  /CUDA (?:driver )?error: out of memory/i,
  /cudaMalloc(?:Async)? failed:? .*out of memory/i,
  /cuda runtime error \(2\) : out of memory/i,
  /THCudaCheck FAIL .*error=2 : out of memory/,
  /\bOOM when allocating tensor/,
  /ResourceExhaustedError\b/,
  /(?:RESOURCE_EXHAUSTED|Resource exhausted):?.*(?:[Oo]ut of memory|OOM|[Ff]ailed to allocate)/,
  // The TPU runtime: `RESOURCE_EXHAUSTED: Attempting to reserve 6.48G at the bottom of memory.
  // That was not possible.`, `Attempting to allocate 129.50M. That was not possible.`
  /RESOURCE_EXHAUSTED:?.*Attempting to (?:reserve|allocate) [\d.]+\s*[KMGT]i?B?\b.*That was not possible/,
  /Resource exhausted: Out of memory/i,
  /Out of memory while trying to allocate \d+ bytes/i,
  /Allocator \(\w+\) ran out of memory trying to allocate/,
  /HIP out of memory/i,
  /MPS backend out of memory/i,
  // Apple's Metal in its own words, whichever library drives it (MLX's `[METAL] Command
  // buffer execution failed: Insufficient Memory (00000008:kIOGPUCommandBufferCallback…)`,
  // llama.cpp's `error: Insufficient Memory (…kIOGPUCommandBufferCallbackErrorOutOfMemory)`).
  /\[METAL\] Command buffer execution failed: Insufficient Memory/i,
  /kIOGPUCommandBufferCallbackErrorOutOfMemory/,
  /No available memory for the cache blocks/,
  /larger than the maximum number of tokens that can be stored in KV cache/,
  /Free memory on device\b.*less than desired GPU memory utilization/,
];
// Words that take a generic resource error away from the GPU's memory: TensorFlow's
// `ResourceExhaustedError` also reports a full disk (`disk quota exceeded [Op:SaveV2]`) and an
// allocation in host memory (`… on /job:localhost/replica:0/task:0/device:CPU:0 by allocator
// cpu`). Ray's memory monitor is host memory too.
const NOT_GPU_MEMORY = new RegExp(
  [
    RAY_MEMORY_MONITOR.source,
    /disk quota exceeded|No space left on device/.source,
    /device:CPU:\d|by allocator cpu\b|DefaultCPUAllocator/.source,
  ].join("|"),
  "i",
);
const KV_CACHE = /No available memory for the cache blocks|tokens that can be stored in KV cache/;
const UTILIZATION = /less than desired GPU memory utilization/;
const XLA =
  /RESOURCE_EXHAUSTED|XlaRuntimeError|Out of memory while trying to allocate|Failed to allocate request/;
const TPU = /at the bottom of memory|HBM|TPU/;
const TF = /ResourceExhaustedError|OOM when allocating tensor|_bfc\b/;
// Apple silicon: PyTorch's MPS backend and Metal itself. The GPU shares the machine's unified
// memory, under a limit of its own.
const APPLE = /\bMPS backend|\[METAL\]|kIOGPUCommandBuffer/i;

// XLA's report broken inside its message by the terminal or the paste (`… Execution of replica
// 0 failed: Resource exhausted: Out` / `of memory while trying to allocate 5520758552 bytes.`):
// read with the line after it.
const SPLIT_XLA_OOM = /(?:RESOURCE_EXHAUSTED|Resource exhausted):?\s*Out of memory/i;

/** An XLA out-of-memory message split over two lines: the first line, as the hit. */
function splitXlaOom(facts: FailureFacts): LineHit | null {
  const lines = facts.lines;
  for (let i = 0; i + 1 < lines.length; i++) {
    const first = lines[i].text.trimEnd();
    if (!/(?:RESOURCE_EXHAUSTED|Resource exhausted)/i.test(first)) continue;
    const match = SPLIT_XLA_OOM.exec(`${first} ${lines[i + 1].text.trimStart()}`);
    if (match && !SPLIT_XLA_OOM.test(first)) return { line: lines[i], match };
  }
  return null;
}

/** The GPU ran out of memory. */
export const CUDA_OOM_CAUSE: CauseEntry = {
  id: "cuda_oom",
  title: "CUDA out of memory",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration will fail the same way: the model, batch " +
    "and sequence length need the same memory on the same GPU. Change the configuration first.",
  fixes: [
    "Halve the batch size",
    "Keep the effective batch size with gradient accumulation over smaller micro-batches",
    "Enable activation (gradient) checkpointing, e.g. `model.gradient_checkpointing_enable()` " +
    "or `torch.utils.checkpoint`",
    "Train in bf16/fp16 with automatic mixed precision (`torch.autocast`)",
    "On CUDA, set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` in the job's env to " +
    "reduce fragmentation when reserved memory is much larger than allocated",
    "Request a GPU with more memory, or more GPUs with FSDP/ZeRO sharding",
  ],
  match(facts) {
    const hit = findLine(facts, CUDA_OOM, { unless: NOT_GPU_MEMORY }) ?? splitXlaOom(facts);
    const event = facts.input.events.find((e) =>
      e.type === "OOM" && CUDA_OOM.some((re) => re.test(e.message))
    );
    if (!hit) {
      if (!event) return null;
      return {
        confidence: 0.85,
        likely_cause: `The GPU ran out of memory: "${excerpt(event.message, 160)}"`,
        evidence: present({ kind: "event", detail: event.message }, exitCodeEvidence(facts)),
      };
    }
    const asked = /Tried to allocate ([\d.]+ [KMGT]i?B)/.exec(hit.line.text);
    const gpu = /GPU (\d+)/.exec(hit.line.text);
    const evidence: Evidence[] = [logEvidence(hit.line)];
    if (facts.failureClass === "OOM") evidence.push(failureClassEvidence(facts));
    const exit = exitCodeEvidence(facts);
    if (exit) evidence.push(exit);
    const where = gpu ? ` on GPU ${gpu[1]}` : "";
    const what = asked ? ` while trying to allocate ${asked[1]}` : "";
    const text = hit.line.text;
    return {
      confidence: capped(0.95 + (facts.failureClass === "OOM" ? 0.02 : 0)),
      likely_cause: KV_CACHE.test(text)
        ? `The inference engine has no GPU memory left for its KV cache after loading the ` +
          `model: "${excerpt(hit.line.raw, 160)}"`
        : UTILIZATION.test(text)
        ? `The GPU has less free memory at start-up than the inference engine's ` +
          `gpu_memory_utilization asks for: "${excerpt(hit.line.raw, 160)}"`
        : APPLE.test(text)
        ? `The GPU (Apple silicon, Metal) ran out of memory${what}: ` +
          `"${excerpt(hit.line.raw, 160)}"`
        : `The GPU ran out of memory${where}${what}: "${excerpt(hit.line.raw, 160)}"`,
      evidence,
      fixes: KV_CACHE.test(text)
        ? [
          "Raise `gpu_memory_utilization` (the share of GPU memory vLLM may take) if nothing " +
          "else uses the GPU, or lower `max_model_len` / `max_num_seqs`",
          "Use more GPUs (`tensor_parallel_size`) or a quantized model",
        ]
        : UTILIZATION.test(text)
        ? [
          "Lower `gpu_memory_utilization` to the share of GPU memory that is free, or stop the " +
          "other processes that hold memory on that GPU (`nvidia-smi`)",
          "Do not start a second engine (or a training process) on a GPU an engine already uses",
        ]
        : APPLE.test(text)
        ? [
          "On Apple silicon the GPU shares the machine's memory under a limit of its own: " +
          "reduce the batch size or sequence length (MLX: `--batch-size`, `--max-seq-length`, " +
          "`--grad-checkpoint`), and leave other processes less of that memory",
          "PyTorch on MPS: `PYTORCH_MPS_HIGH_WATERMARK_RATIO` in the job's env moves the limit, " +
          "at the risk of the whole machine running out of memory",
        ]
        : TPU.test(text)
        ? [
          "The accelerator (TPU) ran out of its own memory: reduce the per-device batch size or " +
          "sequence length, or shard the model (FSDP/SPMD) across more devices",
        ]
        : XLA.test(text)
        ? [
          "JAX preallocates 75 % of GPU memory: set `XLA_PYTHON_CLIENT_MEM_FRACTION` or " +
          "`XLA_PYTHON_CLIENT_PREALLOCATE=false` in the job's env when other processes share " +
          "the GPU, else reduce the batch or shard the model",
        ]
        : TF.test(text)
        ? [
          "TensorFlow: reduce the batch size; call " +
          "`tf.config.experimental.set_memory_growth(gpu, True)` so two processes can share a " +
          "GPU",
        ]
        : undefined,
    };
  },
};

// A CUDA runtime library the package was built against is not where the loader looks, raised
// on import (`ImportError: libcufft.so.11: cannot open shared object file`, `OSError:
// libcublas.so.11: …` from ctypes): the installed CUDA does not fit the build. Only the
// exception's own line counts: TensorFlow's warning `Could not load dynamic library
// 'libcudart.so.10.1'; dlerror: …` names a library it can run without. cuDNN's own library is
// cuDNN's (see CUDNN).
const MISSING_CUDA_LIBRARY =
  /(?:^\s*|(?:ImportError|OSError): )(lib(?:cu(?:dart|blas(?:Lt)?|fft|rand|solver(?:Mg)?|sparse|pti)|nvrtc(?:-builtins)?|nvJitLink|nvToolsExt)[\w-]*\.so[\d.]*): cannot open shared object file/;
const VERSION_MISMATCH = [
  /CUDA driver version is insufficient for CUDA runtime version/i,
  /The NVIDIA driver on your system is too old/i,
  /cudaErrorInsufficientDriver|CUDA_ERROR_SYSTEM_DRIVER_MISMATCH/,
  /system has unsupported display driver \/ cuda driver combination/i,
  /forward compatibility was attempted on non supported HW/i,
  /with CUDA capability sm_\d+ is not compatible with the current PyTorch installation/,
  /no kernel image is available for execution on the device/i,
  // JAX's CUDA backend refusing a CUDA library older than the one it was built against:
  // `Found cuDNN version 8600, but JAX was built against version 8906, which is newer`,
  // `Outdated cuDNN installation found.`
  /Found (?:cuDNN|cuBLAS|cuSOLVER|cuFFT|cuSPARSE|CUDA|NCCL|cuPTI) version \d+, but JAX was built against version \d+/,
  /Outdated (?:cuDNN|cuBLAS|cuSOLVER|cuFFT|cuSPARSE|CUDA|NCCL|cuPTI) installation found/,
  MISSING_CUDA_LIBRARY,
];
const JAX_LIBRARY = /but JAX was built against|Outdated \w+ installation found/;

/** The CUDA runtime the code was built for does not fit the node's driver or GPU. */
export const CUDA_VERSION_MISMATCH_CAUSE: CauseEntry = {
  id: "cuda_version_mismatch",
  title: "CUDA driver/runtime mismatch",
  retry: "fails_again",
  retry_advice: "A retry on the same node will fail the same way: the installed CUDA runtime " +
    "(or GPU architecture) and the driver do not fit. Fix the environment, or pin the job to a " +
    "node whose driver is new enough.",
  fixes: [
    'Compare `nvidia-smi` (driver, the highest CUDA it supports) with `python -c "import torch; ' +
    'print(torch.version.cuda)"` on the node',
    "Install a PyTorch wheel built for the node's CUDA version (e.g. " +
    "`pip install torch --index-url https://download.pytorch.org/whl/cu121`), or upgrade the driver",
    "For `no kernel image` / `sm_XX is not compatible`: install a build that includes the GPU's " +
    "architecture",
    "With Docker, use an image whose CUDA version the host driver supports",
  ],
  match(facts) {
    const hit = findLine(facts, VERSION_MISMATCH);
    if (!hit) return null;
    const jax = JAX_LIBRARY.test(hit.line.text);
    const library = MISSING_CUDA_LIBRARY.exec(hit.line.text)?.[1];
    if (library) {
      return {
        confidence: 0.93,
        likely_cause: `A CUDA library the package was built against cannot be loaded ` +
          `(${library}): the CUDA installed where the job runs does not fit the build: ` +
          `"${excerpt(hit.line.raw, 160)}"`,
        evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
        fixes: [
          `Install the build of the package made for the CUDA on the node (PyTorch's CUDA ` +
          "wheels bring their own CUDA libraries as `nvidia-*` packages), or install the CUDA " +
          `release that provides ${library} and put its lib64 folder on LD_LIBRARY_PATH in the ` +
          "job's env",
          `Check which copy the loader finds: \`ldconfig -p | grep ${library.split(".so")[0]}\`` +
          " and `pip list | grep nvidia` in the job's environment",
        ],
      };
    }
    return {
      confidence: 0.93,
      likely_cause: jax
        ? `JAX cannot use the GPU: an installed CUDA library is older than the one it was built ` +
          `against: "${excerpt(hit.line.raw, 160)}"`
        : `The CUDA runtime does not fit the node's driver or GPU: ` +
          `"${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
      fixes: jax
        ? [
          "Install JAX with the CUDA libraries it was built against (`pip install -U " +
          '"jax[cuda12]"`), or put the newer library first on `LD_LIBRARY_PATH`; JAX falls back to ' +
          "the CPU otherwise",
        ]
        : undefined,
    };
  },
};

const NO_DEVICE = [
  /no CUDA-capable device is detected/i,
  /No CUDA GPUs are available/i,
  /Found no NVIDIA driver on your system/i,
  /torch\.cuda\.is_available\(\) is False/,
  /Torch not compiled with CUDA enabled/,
  /cudaErrorNoDevice|CUDA_ERROR_NO_DEVICE/,
  /NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver/,
  /CUDA error: invalid device ordinal/i,
  // JAX's CUDA backend after the driver refused to initialise (`failed call to cuInit:
  // CUDA_ERROR_UNKNOWN` in a virtual machine, `CUDA_ERROR_SYSTEM_NOT_READY` on a node whose
  // NVSwitch fabric manager is not running).
  /FAILED_PRECONDITION: No visible GPU devices/,
  // Lightning asked for GPUs (`accelerator="gpu"`) where neither CUDA nor MPS is usable.
  /No supported gpu backend found/,
  // The runtime's own "system not ready" (802): on a node with NVSwitch, the fabric manager is
  // not running, so no GPU can be used (`Error 802: system not yet initialized`, `cuda runtime
  // error (802) : system not yet initialized`).
  /\b(?:Error |error \()802\)?\s*:\s*system not yet initialized|cudaErrorSystemNotReady/i,
];
// The driver's own reason, printed before the error above.
const CU_INIT = /failed call to cuInit: (?:.*?: )?(CUDA_ERROR_\w+)/;

/** The process saw no GPU (none requested, none visible, or a CPU-only build). */
export const NO_CUDA_DEVICE_CAUSE: CauseEntry = {
  id: "no_cuda_device",
  title: "no CUDA device visible",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration will fail the same way: the process will " +
    "again see no usable GPU. Request GPUs or fix the environment first.",
  fixes: [
    "Request GPUs in the job (`gpus: 1` or more): a job with `gpus: 0` runs with " +
    "`CUDA_VISIBLE_DEVICES` set to an empty string, so it sees no GPU",
    "Check that the installed PyTorch is a CUDA build (`torch.version.cuda` is not None)",
    "Check `nvidia-smi` on the node: the driver must be loaded",
    "With Docker, run with the NVIDIA container runtime (`--gpus`)",
  ],
  match(facts) {
    const hit = findLine(facts, NO_DEVICE);
    if (!hit) return null;
    const ordinal = /invalid device ordinal/i.test(hit.line.text);
    const cuInit = findLine(facts, [CU_INIT]);
    const driver = cuInit ? ` (the driver failed to initialise: ${cuInit.match[1]})` : "";
    return {
      confidence: 0.9,
      likely_cause: ordinal
        ? `The code asked for a GPU index the job cannot see: "${excerpt(hit.line.raw, 160)}"`
        : `The process found no usable CUDA device${driver}: "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(
        logEvidence(hit.line),
        cuInit && cuInit.line !== hit.line ? logEvidence(cuInit.line) : null,
        exitCodeEvidence(facts),
      ),
      fixes: cuInit?.match[1] === "CUDA_ERROR_SYSTEM_NOT_READY" ||
          /system not yet initialized|SystemNotReady/i.test(hit.line.text)
        ? [
          "On a node with NVSwitch (HGX, DGX), start the fabric manager " +
          "(`systemctl start nvidia-fabricmanager`) and check `nvidia-smi -q` before running",
        ]
        : ordinal
        ? [
          "gpuctl sets `CUDA_VISIBLE_DEVICES` to the job's GPUs, which the process sees " +
          "renumbered from 0: use `cuda:0` … `cuda:{gpus-1}` (or `LOCAL_RANK`), never a host index",
        ]
        : undefined,
    };
  },
};

const DEVICE_ERROR = [
  /device-side assert triggered/i,
  /an illegal memory access was encountered/i,
  /an illegal instruction was encountered/i,
  /CUDA_ERROR_ILLEGAL_ADDRESS|cudaErrorIllegalAddress/,
  /the launch timed out and was terminated/i,
  /CUDA error: misaligned address/i,
  /CUDA error: unspecified launch failure|\bunspecified launch failure\b/i,
  /CUBLAS_STATUS_EXECUTION_FAILED/,
  // The kernel's own assertion, printed before the exception (which a cut log may lack):
  // `…Loss.cu:103: nll_loss2d_forward_kernel: block: [5,0,0], thread: [996,0,0] Assertion
  // `t >= 0 && t < n_classes` failed.`
  /\.cuh?:\d+: .*block: \[\d+,\d+,\d+\], thread: \[\d+,\d+,\d+\].*Assertion .* failed/,
  // The runtime's unknown error (999; 30 before CUDA 10) and a kernel the GPU cannot run
  // (`invalid device function`, code 98), also inside a C++ abort's `what():` line or in
  // another library's words (Marian's `CUDA error 999 'unknown error'`, Torch7's
  // `cuda runtime error (30) : unknown error`, dlib's `code: 98, reason: invalid device function`).
  /CUDA error: unknown error|cudaErrorUnknown|CUDA error 999\b|cuda runtime error \(30\)|error=30 : unknown error/i,
  /CUDA error: invalid device function|\binvalid device function\b|cudaErrorInvalidDeviceFunction/i,
];
// Kernel failures that do not come from the inputs or the code when they strike a run that had
// been training: the driver's unknown error, a launch failure, a kernel the GPU suddenly cannot
// run. At start-up they are the environment's (a driver, a build), and recur.
const MACHINE_ERROR =
  /unknown error|cudaErrorUnknown|error 999\b|\(30\)|unspecified launch failure|invalid device function/i;
// A line that shows training under way: a step, iteration or epoch counter past its start, a
// progress bar past 0 % (see also PERCENT_BAR), a loss value.
const PROGRESS = [
  // A counter past its first values (`step: 5700`, `Up. 51000`, `iteration 12`, `Epoch 3`):
  // the first step or epoch is still start-up.
  /\b(?:steps?|iter(?:ation)?s?|it|global_step|updates?|epochs?)\b\s*[:=#[]?\s*(?:[2-9]|[1-9]\d+)\b/i,
  /\b(?:Up|Ep)\.\s*(?:[2-9]|[1-9]\d+)\b/,
  // An epoch's iteration counter past its first item (`Epoch: [1][2200/4682]`, as the
  // ImageNet example and its descendants print it): the first epoch may be under way too.
  /\bEpoch:?\s*\[\s*\d+\s*\]\s*\[\s*(?:[2-9]|[1-9]\d+)\s*\/\s*\d+\s*\]/i,
  // tqdm past its first item: `57% 66/115 [02:54<01:44,  2.13s/it]`.
  /\b(?:[2-9]|[1-9]\d+)\/\d+ \[[\d:]+<[\d:?]+,\s*[\d.?]+\s*(?:it\/s|s\/it)/,
];
// A tqdm bar by its percentage alone, its counters cut by the terminal or the paste
// (` 65%|██████▍`): past 0 % and short of 100 %, the run was in the middle of its work.
const PERCENT_BAR = /(?:^|[\s:])(?:[1-9]|[1-9]\d)%\|/;
// What a bar counts when it is not training: a start-up that loads, downloads or prepares
// (`Loading checkpoint shards: 50%|`, `Downloading model.safetensors: 65%|`, `Map: 40%|`,
// Lightning's `Sanity Checking`), or bytes (`12.3MB/s`).
const START_UP_BAR =
  /load|download|fetch|upload|extract|unzip|install|map\b|token|generat|prepar|resolv|shard|convert|compil|cach|sanity|[KMG]i?B\b|\bB\/s/i;

/** A CUDA kernel failed: an out-of-range index in user code or a faulty kernel. */
export const CUDA_DEVICE_ERROR_CAUSE: CauseEntry = {
  id: "cuda_device_error",
  title: "CUDA kernel error",
  retry: "fails_again",
  retry_advice: "A retry with the same code and data will most likely fail the same way: a " +
    "device-side assert or illegal memory access comes from the inputs or the code, not from " +
    "the machine (if it recurs at random steps on one node only, suspect that GPU).",
  fixes: [
    "Re-run with `CUDA_LAUNCH_BLOCKING=1` in the job's env so the traceback points at the " +
    "failing operation",
    "Check that class labels lie in `[0, num_classes)` and embedding indices in " +
    "`[0, num_embeddings)` (the usual cause of device-side asserts)",
    "Reproduce on the CPU, where the same bug raises a readable IndexError",
    "For illegal memory access in a custom or fused kernel, disable it (e.g. the flash-attention " +
    "or compile path) to confirm",
  ],
  match(facts) {
    const hit = findLine(facts, DEVICE_ERROR, {
      unless: /potential root causes|failed call to cuInit/,
    });
    if (!hit) return null;
    const training = MACHINE_ERROR.test(hit.line.text) ? progressBefore(facts, hit.line) : null;
    return {
      confidence: 0.88,
      likely_cause: `A CUDA kernel failed: "${excerpt(hit.line.raw, 160)}"` +
        (training ? " after the run had been training" : ""),
      evidence: present(
        logEvidence(hit.line),
        training ? logEvidence(training, "training was under way") : null,
        exitCodeEvidence(facts),
      ),
      ...(training
        ? {
          retry: "may_help" as const,
          retry_advice: "A retry may help: the error struck a run that had been training, and " +
            "an unknown error or launch failure there points at the driver or the GPU rather " +
            "than the code. If it recurs on the same node, check that GPU (`nvidia-smi -q`, " +
            "`dmesg | grep -i xid`) and resume from the last checkpoint elsewhere.",
          fixes: [
            "Check the GPU's health on the node (`nvidia-smi -q -d ECC,TEMPERATURE`, " +
            "`dmesg | grep -i xid`) and resume from the latest checkpoint",
          ],
        }
        : {}),
    };
  },
};

/** The last line before `at` (or `at` itself, before the error) that shows training under way. */
function progressBefore(facts: FailureFacts, at: LogLine): LogLine | null {
  const end = facts.lines.indexOf(at);
  for (let i = end; i >= 0; i--) {
    const line = facts.lines[i];
    // On the error's own line, only what was printed before the error counts.
    const text = i === end
      ? line.text.slice(0, Math.max(0, line.text.search(MACHINE_ERROR)))
      : line.text;
    if (/^\s*(?:frame #|File ")/.test(text)) continue;
    if (PROGRESS.some((re) => re.test(text)) || midwayBar(text)) return line;
  }
  return null;
}

/** A tqdm bar between 0 % and 100 % whose label and counters do not say it is start-up work. */
function midwayBar(text: string): boolean {
  const bar = PERCENT_BAR.exec(text);
  if (!bar) return false;
  return !START_UP_BAR.test(text);
}

// cuDNN's own library missing on import (`ImportError: libcudnn.so.8: cannot open shared object
// file`), as TensorFlow's `DNN library is not found` says at run time.
const CUDNN_LIBRARY =
  /(?:^\s*|(?:ImportError|OSError): )(libcudnn[\w-]*\.so[\d.]*): cannot open shared object file/;
const CUDNN = [
  /CUDNN_STATUS_(?!SUCCESS)([A-Z_]+)/,
  /cuDNN error: (\w+)/i,
  /(?:GET|FIND) was unable to find an engine to execute this computation/,
  /cuDNN Frontend error/i,
  // TensorFlow and JAX/XLA name cuDNN by its calls or as "the DNN library".
  /Failed to call ThenRnn\w+/,
  /DNN library (?:initialization failed|is not found)/,
  /Could not create cudnn handle/i,
  /cuDNN failed to initialize/,
  CUDNN_LIBRARY,
];

/** cuDNN (the convolution and RNN library) refused or failed an operation. */
export const CUDNN_ERROR_CAUSE: CauseEntry = {
  id: "cudnn_error",
  title: "cuDNN error",
  retry: "fails_again",
  retry_advice: "A retry with the same inputs and the same cuDNN will most likely fail the same " +
    "way: the operation, its shapes and memory stay the same. Change one of them first.",
  fixes: [
    "Confirm that cuDNN is the cause: run once with `torch.backends.cudnn.enabled = False` (slower, " +
    "but the same operation then runs without cuDNN)",
    "Make the inputs of the failing convolution or RNN contiguous (`x = x.contiguous()`): " +
    "`CUDNN_STATUS_NOT_SUPPORTED` often means a non-contiguous or unusually shaped input",
    "Try a smaller batch: cuDNN needs workspace memory, and `EXECUTION_FAILED`, `NOT_SUPPORTED` " +
    "or `INTERNAL_ERROR` often hide a GPU that is nearly out of memory",
    "Upgrade PyTorch (its wheels bundle cuDNN) or the driver: some of these are cuDNN bugs fixed " +
    "in later versions",
  ],
  match(facts) {
    const hit = findLine(facts, CUDNN);
    if (!hit) return null;
    const library = CUDNN_LIBRARY.exec(hit.line.text)?.[1];
    if (library) {
      return {
        // Above the missing-module reading of the same ImportError line.
        confidence: 0.92,
        likely_cause: `cuDNN's library cannot be loaded (${library}): the cuDNN installed ` +
          `where the job runs does not fit the build: "${excerpt(hit.line.raw, 160)}"`,
        evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
        fixes: [
          `Install the cuDNN release that provides ${library} for the node's CUDA (or the ` +
          "package build that bundles it, such as PyTorch's CUDA wheels) and put its folder on " +
          "LD_LIBRARY_PATH in the job's env",
        ],
      };
    }
    const status = /CUDNN_STATUS_([A-Z_]+)/.exec(hit.line.text)?.[1];
    return {
      confidence: 0.87,
      likely_cause: `cuDNN failed${status ? ` with CUDNN_STATUS_${status}` : ""}: ` +
        `"${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const GPU_FAULT = [
  /uncorrectable ECC error encountered/i,
  /cudaErrorECCUncorrectable|CUDA_ERROR_ECC_UNCORRECTABLE/,
  /NVRM: Xid \([^)]*\): (\d+)/,
  /GPU has fallen off the bus/i,
];

/** The driver reported a fault of the GPU itself: an uncorrectable ECC error, an Xid. */
export const GPU_HARDWARE_ERROR_CAUSE: CauseEntry = {
  id: "gpu_hardware_error",
  title: "GPU hardware error (ECC/Xid)",
  retry: "may_help",
  retry_advice: "A retry may help: the driver reported a fault of the GPU's memory or of the " +
    "GPU itself, not an error of the training code, and such faults are often transient. If it " +
    "recurs on the same GPU, that GPU needs a reset or repair.",
  fixes: [
    "Check the GPU on the node: `nvidia-smi -q -d ECC` (volatile and aggregate uncorrectable " +
    "counts) and `dmesg | grep -i xid`",
    "Reset the GPU (`nvidia-smi -r`, with no process on it) or reboot the node; if errors keep " +
    "coming, take the node out of rotation and pin jobs to other nodes",
    "Resume from the latest checkpoint",
  ],
  match(facts) {
    const hit = findLine(facts, GPU_FAULT);
    if (!hit) return null;
    const xid = /Xid \([^)]*\): (\d+)/.exec(hit.line.text)?.[1];
    return {
      confidence: 0.92,
      likely_cause: `The GPU reported a hardware fault${xid ? ` (Xid ${xid})` : ""}: ` +
        `"${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};
