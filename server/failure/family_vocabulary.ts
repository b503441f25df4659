/**
 * The family second chance: when no catalogue entry recognised the deciding error (the last
 * traceback's exceptions, or the log's last error line) and the card would fall back to a
 * generic "Python exception" or "non-zero exit", the error's type and message are read once
 * more for the words every stack uses for a family of causes: memory ("out of memory",
 * "RESOURCE_EXHAUSTED", "failed to allocate" near GPU words or host words), NaN ("nan", "inf"
 * with loss or gradient words), shapes, checkpoints, versions, the network, permissions,
 * missing files… Each family names one catalogue entry; the card's fixes and retry verdict
 * are that entry's. A specific match always wins: this only replaces the generic fallback.
 *
 * Words are matched as words, never as parts of words ("inf" is not in "info", "oom" not in
 * "room"); an exception's CamelCase type is read as its words (`ResourceExhaustedError`:
 * "resource exhausted error"), `_` and punctuation between words are spaces, a path is read
 * as the word "path" and a URL as its host.
 */
import type { CauseEntry, CauseMatch } from "./cause.ts";
import { excerpt, exitCodeEvidence, logEvidence, present } from "./cause.ts";
import type { FailureFacts, LogLine } from "./facts.ts";

/** One family: the catalogue entry it names and the words that show it. */
export interface Family {
  /** The catalogue entry's id. */
  cause: string;
  /** What the error is, for the card: "the GPU (or another accelerator) ran out of memory". */
  says: string;
  /** Exception types (the last dotted part) that show the family by themselves. */
  types?: readonly string[];
  /** Words of which any one shows the family by itself. */
  any?: readonly string[];
  /** Groups of words, named for the card: one word of each group must be there. */
  all?: Readonly<Record<string, readonly string[]>>;
  /** Words that rule the family out (another family's, or a sign it is something else). */
  unless?: readonly string[];
}

// Shared vocabularies.
const MEMORY = [
  "out of memory",
  "oom",
  "resource exhausted",
  "exhausted",
  "failed to allocate",
  "unable to allocate",
  "cannot allocate",
  "can't allocate",
  "could not allocate",
  "insufficient memory",
  "not enough memory",
  "allocation failed",
  "ran out of memory",
  "out of device memory",
  "low on memory",
  "memory error",
];
const ACCELERATOR = [
  "gpu",
  "cuda",
  "cudnn",
  "cublas",
  "device",
  "hbm",
  "tpu",
  "vram",
  "accelerator",
  "xla",
  "mps",
  "hip",
  "rocm",
  "nvidia",
  "bfc",
  "kv cache",
  "cache blocks",
];
const HOST = [
  "host",
  "ram",
  "cpu",
  "system memory",
  "swap",
  "physical memory",
  "virtual memory",
  "paging file",
  "page file",
  "node running low",
  "memory on node",
  "numpy",
  "for an array",
];
const TENSOR = [
  "tensor",
  "array",
  "matrix",
  "input",
  "output",
  "target",
  "logits",
  "labels",
  "label",
  "axis",
  "layer",
  "weight",
  "mat1",
  "mat2",
  "operand",
  "channels",
];
const NETWORK = [
  "connection refused",
  "connection reset",
  "connection aborted",
  "connection closed",
  "connection error",
  "connection lost",
  "connection timed out",
  "connect timeout",
  "read timed out",
  "timed out",
  "timeout",
  "unreachable",
  "could not resolve",
  "name resolution",
  "name or service not known",
  "nodename nor servname",
  "temporary failure",
  "failed to establish",
  "max retries exceeded",
  "remote end closed",
  "remote disconnected",
  "reset by peer",
  "closed by peer",
  "econnrefused",
  "econnreset",
  "etimedout",
  "ehostunreach",
  "enetunreach",
  "service unavailable",
  "bad gateway",
  "gateway timeout",
  "ssl error",
  "proxy error",
  "getaddrinfo",
  "network error",
  "no route to host",
  "deadline exceeded",
  "server error",
  "temporarily unavailable",
  "too many requests",
  "couldn't connect",
  "could not connect",
  "cannot connect",
  "can't connect",
  "failed to connect",
  "unable to connect",
  "internet connection",
];
/** Exception types that name a network failure, whatever their message says. */
export const NETWORK_TYPES = [
  "ConnectionError",
  "ConnectionResetError",
  "ConnectionRefusedError",
  "ConnectionAbortedError",
  "TimeoutError",
  "Timeout",
  "ReadTimeout",
  "ConnectTimeout",
  "ReadTimeoutError",
  "ConnectTimeoutError",
  "MaxRetryError",
  "NewConnectionError",
  "ProtocolError",
  "RemoteDisconnected",
  "IncompleteRead",
  "ChunkedEncodingError",
  "gaierror",
  "SSLError",
  "ProxyError",
  "DistNetworkError",
  "ServiceUnavailable",
  "DeadlineExceeded",
];
const HUB = ["huggingface", "hf", "hugging face", "hub", "hf hub"];

/**
 * The families, tried in order; the first that fits decides. A narrower family comes before
 * a wider one that shares its words (shared memory before memory, a checkpoint's shapes
 * before shapes, the Hub before the network).
 */
export const FAMILIES: readonly Family[] = [
  {
    cause: "shm_exhausted",
    says: "the shared memory (/dev/shm) ran out",
    all: {
      "shared memory": ["shared memory", "shm", "dev shm"],
      "lack": [
        ...MEMORY,
        "no space",
        "too small",
        "bus error",
        "insufficient",
        "failed to extend",
        "error while creating",
        "failed to create",
        "could not create",
      ],
    },
  },
  {
    cause: "disk_full",
    says: "the disk is full",
    any: [
      "no space left",
      "disk full",
      "disk is full",
      "quota exceeded",
      "out of disk",
      "not enough disk",
      "insufficient disk",
      "not enough space",
      "insufficient space",
      "enospc",
    ],
  },
  {
    cause: "host_oom_killed",
    says: "the host ran out of memory (RAM, not the GPU's)",
    types: ["MemoryError", "_ArrayMemoryError"],
    // Python's own MemoryError is the host's, wherever it is quoted.
    any: ["memory error"],
    all: { memory: MEMORY, host: HOST },
    unless: ACCELERATOR,
  },
  {
    cause: "cuda_oom",
    says: "the GPU (or another accelerator) ran out of memory",
    any: ["out of memory", "oom", "resource exhausted", "ran out of memory"],
    all: { memory: MEMORY, device: ACCELERATOR },
    // The kernel's OOM killer is the host's, and a message that lists it among possible
    // causes (Ray's dead worker) names no cause.
    unless: ["oom killer"],
  },
  {
    cause: "nan_loss",
    says: "the loss or another training value became NaN or infinite",
    all: {
      value: ["nan", "inf", "infinity", "infinite", "non finite", "nonfinite", "not finite"],
      quantity: [
        "loss",
        "losses",
        "gradient",
        "grad",
        "grads",
        "grad norm",
        "output",
        "outputs",
        "metric",
        "logits",
        "weights",
        "parameters",
        "prediction",
        "pred",
        "activations",
        "tensor",
        "numerics",
        "histogram",
        "network",
        "model",
        "training",
        "iteration",
        "step",
        "epoch",
      ],
    },
  },
  {
    cause: "state_dict_mismatch",
    says: "the checkpoint does not fit the model",
    all: {
      checkpoint: [
        "state dict",
        "checkpoint",
        "ckpt",
        "pretrained",
        "pre trained",
        "weights",
        "saved model",
        "restore",
        "restoring",
        "load state dict",
        "saved weight",
        "provided weight",
        "weight shape",
      ],
      mismatch: [
        "missing key",
        "unexpected key",
        "not found in checkpoint",
        "key",
        "size mismatch",
        "mismatch",
        "mismatched",
        "does not match",
        "do not match",
        "don't match",
        "incompatible",
        "not compatible",
        "shape",
      ],
    },
  },
  {
    cause: "shape_mismatch",
    says: "tensor shapes do not fit",
    any: [
      "shape mismatch",
      "size mismatch",
      "dimension mismatch",
      "incompatible shapes",
      "incompatible shape",
      "shapes are incompatible",
      "cannot be broadcast",
      "could not broadcast",
      "not broadcastable",
      "cannot reshape",
      "shapes cannot be multiplied",
      "must have the same shape",
      "wrong shape",
      "unexpected shape",
      "invalid shape",
      "inconsistent shapes",
    ],
    all: {
      shape: ["shape", "dimension", "dim", "dims", "size", "rank of tensor"],
      mismatch: [
        "mismatch",
        "must match",
        "to match",
        "does not match",
        "doesn't match",
        "do not match",
        "expected",
        "but got",
        "incompatible",
        "inconsistent",
        "not equal",
        "must be equal",
        "same",
        "invalid",
        "wrong",
        "unexpected",
      ],
      tensor: TENSOR,
    },
  },
  {
    cause: "cuda_version_mismatch",
    says: "the CUDA, cuDNN or driver version does not fit what the program was built for",
    all: {
      version: [
        "version",
        "compiled",
        "built against",
        "built with",
        "compiled with",
        "kernel image",
        "ptx",
        "outdated",
      ],
      library: [
        "cuda",
        "cudnn",
        "cublas",
        "cusolver",
        "cusparse",
        "cufft",
        "nvcc",
        "driver",
        "nvidia",
        "compute capability",
        "toolkit",
        "libcudart",
        "ptx",
        "gpu",
      ],
      mismatch: [
        "mismatch",
        "mismatches",
        "mismatched",
        "insufficient",
        "too old",
        "older",
        "newer",
        "not compatible",
        "incompatible",
        "not supported",
        "unsupported",
        "does not match",
        "doesn't match",
        "different",
        "requires",
        "at least",
        "no kernel image",
        "outdated",
        "but",
      ],
    },
  },
  {
    cause: "no_cuda_device",
    says: "no usable GPU was found",
    all: {
      device: ["gpu", "cuda device", "cuda", "nvidia driver", "accelerator", "tpu", "devices"],
      absent: [
        "not available",
        "unavailable",
        "no gpu",
        "no cuda",
        "no device",
        "no devices",
        "could not find",
        "cannot find",
        "can't find",
        "no visible",
        "not detected",
        "found no",
        "no nvidia",
        "failed to initialize",
        "not compiled with cuda",
        "is available is false",
        "cpu only",
        "only has",
        "only have",
      ],
    },
  },
  {
    cause: "cudnn_error",
    says: "cuDNN failed",
    all: {
      cudnn: ["cudnn"],
      failure: [
        "error",
        "failed",
        "failure",
        "status",
        "not initialized",
        "could not",
        "unable",
        "internal",
        "not supported",
        "bad param",
      ],
    },
  },
  {
    cause: "dataloader_worker_killed",
    says: "a DataLoader worker process died",
    all: {
      worker: ["dataloader worker", "data loader worker", "dataloader workers"],
      ended: ["killed", "exited unexpectedly", "died", "timed out", "terminated", "is killed"],
    },
  },
  {
    cause: "port_in_use",
    says: "the port is taken",
    any: ["address already in use", "eaddrinuse", "port is already in use", "errno 98"],
  },
  {
    cause: "nccl_timeout",
    says: "a collective operation timed out",
    all: {
      collective: [
        "nccl",
        "gloo",
        "collective",
        "allreduce",
        "all reduce",
        "allgather",
        "all gather",
        "reduce scatter",
        "broadcast",
        "barrier",
        "process group",
        "watchdog",
        "recv operation",
        "send operation",
      ],
      timeout: ["timeout", "timed out", "deadline exceeded"],
    },
  },
  {
    cause: "nccl_error",
    says: "NCCL failed",
    all: {
      nccl: ["nccl"],
      failure: [
        "error",
        "failed",
        "failure",
        "unhandled",
        "invalid usage",
        "remote process exited",
      ],
    },
  },
  {
    cause: "device_mismatch",
    says: "tensors are on different devices",
    all: {
      host: ["cpu"],
      device: ["cuda", "gpu", "mps", "xla", "tpu"],
      relation: [
        "same device",
        "different device",
        "different devices",
        "same",
        "different",
        "expected",
        "should be",
        "but found",
        "but got",
        "mismatch",
      ],
    },
  },
  {
    cause: "gpu_hardware_error",
    says: "the GPU reported a hardware fault",
    any: [
      "ecc error",
      "uncorrectable ecc",
      "fallen off the bus",
      "gpu is lost",
      "xid",
      "hardware error",
    ],
  },
  {
    cause: "cuda_device_error",
    says: "a CUDA kernel or library call failed on the device",
    any: [
      "device side assert",
      "device side assertion",
      "illegal memory access",
      "illegal address",
      "misaligned address",
      "unspecified launch failure",
      "launch failure",
      "cuda kernel errors",
    ],
    all: {
      library: ["cuda", "cublas", "cusolver", "cusparse", "cufft", "curand", "hip"],
      failure: ["error", "failed", "failure", "status", "assert", "assertion", "illegal"],
    },
  },
  {
    cause: "hub_auth",
    says: "the Hugging Face Hub refused access",
    all: {
      hub: [...HUB, "repo", "repository", "gated"],
      refused: [
        "401",
        "403",
        "unauthorized",
        "forbidden",
        "gated",
        "access denied",
        "not authorized",
        "invalid token",
        "authentication",
        "restricted",
      ],
    },
  },
  {
    cause: "permission_denied",
    says: "the operating system refused access",
    any: [
      "permission denied",
      "access denied",
      "access is denied",
      "not permitted",
      "operation not permitted",
      "eacces",
      "eperm",
      "read only file system",
      "insufficient permissions",
      "permission error",
      "errno 13",
    ],
  },
  {
    cause: "hub_unreachable",
    says: "the Hugging Face Hub could not be reached",
    all: { hub: HUB, network: NETWORK },
  },
  {
    cause: "connection_reset",
    says: "a network connection failed",
    types: NETWORK_TYPES,
    any: NETWORK,
  },
  {
    cause: "command_not_found",
    says: "a program the job runs is not installed",
    any: [
      "command not found",
      "not recognized as an internal or external command",
      "executable file not found",
      "failed to run command",
      "failed to spawn",
    ],
  },
  {
    cause: "module_not_found",
    says: "a Python package is missing",
    any: [
      "no module named",
      "is not installed",
      "please install",
      "pip install",
      "could not import",
      "failed to import",
      "library but it was not found",
      "was not found in your environment",
    ],
  },
  {
    cause: "file_not_found",
    says: "a file or folder the job reads is missing",
    all: {
      missing: [
        "no such file",
        "does not exist",
        "doesn't exist",
        "not exist",
        "not found",
        "cannot find",
        "can't find",
        "could not find",
        "unable to find",
        "unable to open",
        "could not open",
        "cannot open",
        "can't open",
        "failed to open",
        "enoent",
        "errno 2",
      ],
      file: [
        "file",
        "files",
        "path",
        "directory",
        "dir",
        "folder",
        "dataset",
        "image",
        "config",
        "filename",
        "errno 2",
      ],
    },
    unless: ["shared object"],
  },
  {
    cause: "dataloader_pickling",
    says: "an object sent to a worker process cannot be pickled",
    all: {
      pickle: ["can't pickle", "cannot pickle", "pickle", "pickling", "picklable", "serialize"],
      worker: [
        "lambda",
        "local object",
        "worker",
        "workers",
        "dataloader",
        "multiprocessing",
        "spawn",
        "process",
      ],
    },
  },
  {
    cause: "recursion_error",
    says: "the recursion went too deep",
    any: ["maximum recursion depth", "recursion depth"],
  },
  {
    cause: "too_many_open_files",
    says: "the process ran out of file descriptors",
    any: ["too many open files", "emfile"],
  },
];

// Exceptions that name a mistake in the code itself: their message names identifiers (an
// attribute `OutOfMemoryError`, a name `nan_check`), not the failure's family.
const CODE_ERRORS = new Set([
  "AttributeError",
  "NameError",
  "SyntaxError",
  "IndentationError",
  "UnboundLocalError",
]);

/** A family's words compiled: whole words, any run of `_` or punctuation between them. */
function wordsRegex(words: readonly string[]): RegExp {
  const alternatives = words.map((w) =>
    w.split(/\s+/).map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\W_]+")
  );
  return new RegExp(`(?<![A-Za-z0-9])(?:${alternatives.join("|")})s?(?![A-Za-z0-9])`, "i");
}

interface Compiled {
  family: Family;
  any: RegExp | null;
  all: [string, RegExp][];
  unless: RegExp | null;
  types: ReadonlySet<string>;
}

const COMPILED: readonly Compiled[] = FAMILIES.map((family) => ({
  family,
  any: family.any ? wordsRegex(family.any) : null,
  all: Object.entries(family.all ?? {}).map(([name, words]) => [name, wordsRegex(words)]),
  unless: family.unless ? wordsRegex(family.unless) : null,
  types: new Set(family.types ?? []),
}));

const URL_TEXT = /\bhttps?:\/\/([^\s/'"`]+)[^\s'"`]*/g;
const PATH_TEXT =
  /(?<![\w.])(?:[A-Za-z]:\\|~?\.{0,2}\/)[^\s'"`,)\]]*|[\w.-]+(?:\/[\w.-]+){2,}|\b[\w-]+(?:\.[\w-]+)*\.(?:pt|pth|ckpt|bin|safetensors|json|ya?ml|txt|csv|h5|hdf5|npy|npz|pkl|pickle|jpe?g|png|tar|gz|zip|tfrecords?|onnx|py|wav|mp4|parquet|arrow|msgpack)\b/gi;

/**
 * The text a family's words are looked for in: CamelCase names as their words, a URL as its
 * host, a path as the word "path".
 */
export function familyText(text: string): string {
  return text
    .replace(URL_TEXT, " $1 ")
    .replace(PATH_TEXT, " path ")
    .replace(/NaNs?\b/g, " nan ")
    .replace(/\b[A-Z][A-Za-z0-9]*\b/g, camelWords);
}

// `OutOfMemoryError` → `Out Of Memory Error`, `DefaultCPUAllocator` → `Default CPU Allocator`;
// only names that start with a capital, so `cuDNN` stays one word, and a plural acronym
// (`GPUs`) stays one word.
function camelWords(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").replace(/([A-Z]+)([A-Z][a-z]{2})/g, "$1 $2");
}

// A module or name part that only says "this is an error" (`errors_impl`, `exceptions`).
const GENERIC_PART = /error|exception|^_?utils$/i;

/**
 * An exception type as the words that tell something: its modules' names
 * (`huggingface_hub`) and its name without the generic suffix (`ResourceExhaustedError`:
 * `ResourceExhausted`), so that the suffix "Error" never counts as a family's word.
 */
function typeWords(type: string | null): string {
  if (!type) return "";
  const parts = type.split(".");
  const name = parts.pop()!.replace(/(?:Error|Exception|Warning)$/, "");
  return [...parts.filter((p) => !GENERIC_PART.test(p)), name].join(" ");
}

/** Which family a deciding error belongs to, and the words that showed it; null when none. */
export function familyOf(
  type: string | null,
  message: string,
): { family: Family; reasons: string[] } | null {
  const name = type?.split(".").pop() ?? null;
  if (name && CODE_ERRORS.has(name)) return null;
  const text = familyText(`${typeWords(type)} ${message}`);
  for (const c of COMPILED) {
    if (c.unless?.test(text)) continue;
    if (name && c.types.has(name)) return { family: c.family, reasons: [`type ${name}`] };
    const any = c.any?.exec(text);
    if (any) return { family: c.family, reasons: [`"${any[0]}"`] };
    if (c.all.length === 0) continue;
    const reasons: string[] = [];
    for (const [group, re] of c.all) {
      const m = re.exec(text);
      if (!m) break;
      reasons.push(`${group} word "${m[0]}"`);
    }
    if (reasons.length === c.all.length) return { family: c.family, reasons };
  }
  return null;
}

/** One error the card could rest on: its line, its type, and its whole message. */
interface DecidingError {
  line: LogLine;
  type: string | null;
  message: string;
}

// `SomeError: message` at the start of a line without a traceback.
const EXCEPTION_LINE = /^\W*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)):\s*(.*)$/;

/**
 * The errors the family second chance reads, the strongest first: the exceptions of the last
 * traceback chain (the final one first, each with the lines continuing its message), then the
 * line the fallback quoted, then the log's last error line. A launcher's report that a child
 * failed is not one: the child's own error is what counts.
 */
function decidingErrors(facts: FailureFacts, quoted: LogLine | null): DecidingError[] {
  const out: DecidingError[] = [];
  const seen = new Set<LogLine>();
  const add = (line: LogLine | null, type: string | null, message: string) => {
    if (!line || seen.has(line) || facts.child?.line === line) return;
    seen.add(line);
    out.push({ line, type, message });
  };
  const chain = facts.tracebacks.filter((tb) => tb.exception && facts.deciding.has(tb.exception));
  for (const tb of chain.toReversed()) {
    add(tb.exception, tb.type, [tb.message, ...tb.continuation.map((l) => l.text)].join(" "));
  }
  for (const line of [quoted, facts.lastError]) {
    if (!line) continue;
    const m = EXCEPTION_LINE.exec(line.text);
    const rest = linesAfter(facts, line).map((l) => l.text).join(" ");
    add(line, m ? m[1] : null, `${m ? m[2] : line.text} ${rest}`);
  }
  return out;
}

/** Lines after an error line without a traceback that a message may run on in. */
const MAX_RUN_ON = 4;
// A line that starts something else: a traceback, another exception, a logger's record.
const OWN_LINE =
  /^\s*(?:Traceback \(most recent call last\)|\[?\d{4}-\d\d-\d\d|[EWIF]\d{4} |\[?(?:INFO|WARNING|WARN|ERROR|DEBUG|CRITICAL)\b)/;

// The lines right after `line` that continue its message (`RuntimeError: tensor.h 168` then
// `cuda failed with error 2 out of memory`): up to the first blank line, a new record or
// another exception.
function linesAfter(facts: FailureFacts, line: LogLine): LogLine[] {
  const at = facts.lines.indexOf(line);
  const out: LogLine[] = [];
  for (const next of facts.lines.slice(at + 1, at + 1 + MAX_RUN_ON)) {
    if (next.text.trim() === "" || OWN_LINE.test(next.text) || EXCEPTION_LINE.test(next.text)) {
      break;
    }
    out.push(next);
  }
  return out;
}

/** A second chance's finding: the entry it names and its match. */
export interface FamilyFinding {
  entry: CauseEntry;
  match: CauseMatch;
}

/**
 * The family second chance for a run whose best match was a generic fallback: the first
 * deciding error whose words fit a family, as a match of that family's catalogue entry (its
 * fixes and retry verdict are the entry's), or null. `quoted` is the line the fallback quoted.
 */
export function familySecondChance(
  facts: FailureFacts,
  catalogue: readonly CauseEntry[],
  quoted: LogLine | null,
): FamilyFinding | null {
  for (const error of decidingErrors(facts, quoted)) {
    const found = familyOf(error.type, error.message);
    if (!found) continue;
    const entry = catalogue.find((e) => e.id === found.family.cause);
    if (!entry) continue;
    const why = `matched by family: ${found.reasons.join(", ")}`;
    return {
      entry,
      match: {
        confidence: 0.45,
        likely_cause: `By its words, ${found.family.says}: "${excerpt(error.line.raw, 200)}" ` +
          `(${why}; no specific pattern of the catalogue knows this message)`,
        evidence: present(logEvidence(error.line, why), exitCodeEvidence(facts)),
      },
    };
  }
  return null;
}
