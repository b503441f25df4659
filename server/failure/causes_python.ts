/**
 * Python-level causes: missing modules and files, permissions, shared memory, a full disk, NaN
 * loss, ABI mismatches of compiled extensions, too many open files, DataLoader pickling,
 * recursion.
 */
import {
  type CauseEntry,
  type CauseMatch,
  childName,
  excerpt,
  exitCodeEvidence,
  findLine,
  killedBy,
  type LineHit,
  logEvidence,
  present,
} from "./cause.ts";
import type { FailureFacts, LogLine } from "./facts.ts";
import type { Evidence } from "./failure_types.ts";

// Import names whose pip package is named differently, as far as known: for any other name
// the package cannot be told from the module (`cleanfid` is installed as `clean-fid`).
const PIP_NAMES: Readonly<Record<string, string>> = {
  cleanfid: "clean-fid",
  Crypto: "pycryptodome",
  fitz: "pymupdf",
  jwt: "PyJWT",
  OpenGL: "PyOpenGL",
  serial: "pyserial",
  usb: "pyusb",
  wx: "wxPython",
  magic: "python-magic",
  docx: "python-docx",
  cv2: "opencv-python",
  PIL: "pillow",
  sklearn: "scikit-learn",
  skimage: "scikit-image",
  yaml: "pyyaml",
  bs4: "beautifulsoup4",
  dotenv: "python-dotenv",
  google: "protobuf",
  attr: "attrs",
};

const NO_MODULE = /No module named '([^']+)'/;
const CANNOT_IMPORT = /ImportError: cannot import name '([^']+)' from '([^']+)'/;
const SHARED_OBJECT = /ImportError: ([^:\s]+\.so[^:\s]*): cannot open shared object file/;
const IMPORT_ERROR = /\b(?:ModuleNotFoundError|ImportError)\b/;

/** The training code imports a module its environment lacks (or has in another version). */
export const MODULE_NOT_FOUND_CAUSE: CauseEntry = {
  id: "module_not_found",
  title: "missing Python module",
  retry: "fails_again",
  retry_advice: "A retry with the same environment will fail the same way: the module is not " +
    "installed where the job's Python looks. Fix the environment first.",
  fixes: [
    "Run the job with the environment's interpreter explicitly (e.g. `.venv/bin/python train.py`" +
    " or `conda run -n <env> python train.py`): jobs run under `bash -lc`, not your interactive " +
    "shell, so an environment activated in your terminal is not active there",
    "Compare `which python` and `pip list` on the node with the environment you developed in",
  ],
  match(facts) {
    const hit = findLine(facts, [NO_MODULE, CANNOT_IMPORT, SHARED_OBJECT, IMPORT_ERROR]);
    if (!hit) return null;
    const text = hit.line.text;
    const missing = NO_MODULE.exec(text);
    const name = CANNOT_IMPORT.exec(text);
    const lib = SHARED_OBJECT.exec(text);
    const evidence = present(logEvidence(hit.line), exitCodeEvidence(facts));
    if (missing) {
      const module = missing[1];
      const top = module.split(".")[0];
      const pkg = PIP_NAMES[top];
      return {
        confidence: 0.92,
        likely_cause: `The job's Python environment has no module "${module}": it runs with a ` +
          `different interpreter or environment than the one the code was written for`,
        evidence,
        fixes: [
          pkg
            ? `Install it into the job's environment: \`pip install ${pkg}\` (module "${top}" ` +
              `comes from the package "${pkg}")`
            : `Install the package that provides module "${top}" into the job's environment ` +
              "(its pip name may differ from the module's: check the project's requirements)",
          `If "${top}" is part of your project, set the job's working_dir to the project root ` +
          `or add that folder to PYTHONPATH in the job's env`,
        ],
      };
    }
    if (name) {
      return {
        confidence: 0.9,
        likely_cause: `"${name[1]}" cannot be imported from "${name[2]}": the installed ` +
          `version of "${name[2].split(".")[0]}" differs from the one the code expects`,
        evidence,
        fixes: [
          `Pin "${name[2].split(".")[0]}" to the version the code was written for ` +
          "(check the project's requirements file) and reinstall it in the job's environment",
        ],
      };
    }
    if (lib) {
      return {
        confidence: 0.9,
        likely_cause: `A native library "${lib[1]}" is missing on the node, so an import failed`,
        evidence,
        fixes: [
          `Install the package that provides "${lib[1]}" on the node, or a Python wheel that ` +
          "bundles it (for CUDA libraries: the matching PyTorch CUDA build)",
        ],
      };
    }
    return {
      confidence: 0.8,
      likely_cause: `An import failed: "${excerpt(hit.line.raw, 160)}"`,
      evidence,
    };
  },
};

const SCRIPT_MISSING = /can't open file '([^']+)': \[Errno 2\]/;
const FILE_NOT_FOUND = /FileNotFoundError\b/;
const NO_SUCH_FILE = /No such file or directory/;
const TORCH_LOAD = /torch[\\/]serialization\.py|torch\.load\(/;

// The frames and quoted source of the traceback that ends in `line`, as one text.
function frames(facts: FailureFacts, line: LogLine): string {
  const tb = facts.tracebacks.find((t) => t.exception === line);
  return tb ? [...tb.frames.map((f) => f.file), ...tb.source.map((l) => l.text)].join("\n") : "";
}

const CHECKPOINT_PATH = /\.(?:pt|pth|ckpt|safetensors|bin|h5|keras|pkl|index)$|checkpoint|ckpt/i;

// The path a "not found" line names: the quoted one, else the first absolute path.
function pathIn(text: string): string | null {
  const found = /No such file or directory: '([^']+)'/.exec(text) ??
    /can't open file '([^']+)'/.exec(text) ??
    /'((?:\/|\.\/|~\/)[^']+)'/.exec(text) ??
    /(?:^|\s)((?:\/[\w.@+-]+)+\/?)/.exec(text);
  return found ? found[1] : null;
}

/** A file the job reads (data, checkpoint, the script itself) does not exist on the node. */
export const FILE_NOT_FOUND_CAUSE: CauseEntry = {
  id: "file_not_found",
  title: "file not found",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration will fail the same way: the path will " +
    "still be missing. Fix the path or put the file on the node first.",
  fixes: [
    "Relative paths resolve against the job's working_dir, on the agent's host: use an " +
    "absolute path or set working_dir",
    "Make sure the file exists on the node the job ran on (or on storage every node mounts); " +
    "pin the job to that node if only one has it",
  ],
  match(facts) {
    const hit = findLine(facts, [SCRIPT_MISSING, FILE_NOT_FOUND]) ??
      findLine(facts, [NO_SUCH_FILE], { unless: /command not found|exec/ });
    if (!hit) return null;
    const evidence = present(logEvidence(hit.line), exitCodeEvidence(facts));
    const path = pathIn(hit.line.text);
    const script = SCRIPT_MISSING.test(hit.line.text);
    const confidence = script || /FileNotFoundError/.test(hit.line.text) ? 0.88 : 0.6;
    if (script || (path && /\.py$/.test(path))) {
      return {
        confidence,
        likely_cause: `The script "${path}" does not exist where the job ran: working_dir is ` +
          "probably wrong",
        evidence,
        fixes: [
          `Set the job's working_dir to the folder that holds "${path}" on the node, or give ` +
          "the script's absolute path in the command",
        ],
      };
    }
    if (path && CHECKPOINT_PATH.test(path)) {
      // A file read with torch.load may be a checkpoint or a saved dataset: say what is known.
      const checkpoint = /checkpoint|ckpt/i.test(path);
      return {
        confidence,
        likely_cause: checkpoint
          ? `The checkpoint "${path}" does not exist on the node`
          : `The file "${path}" does not exist on the node` +
            (TORCH_LOAD.test(frames(facts, hit.line)) ? " (read with torch.load)" : ""),
        evidence,
        fixes: [
          `Check the path "${path}": a file written on another node is not on this one unless ` +
          "its folder is on shared storage",
          checkpoint
            ? "Start from scratch (drop the resume flag) if no checkpoint exists yet"
            : "If it is a checkpoint to resume from, start from scratch when none exists yet; " +
              "if it is data, create or copy it to the node first",
        ],
      };
    }
    return {
      confidence,
      likely_cause: path
        ? `The data path "${path}" does not exist on the node`
        : `A file is missing: "${excerpt(hit.line.raw, 160)}"`,
      evidence,
      fixes: path
        ? [`Check that "${path}" exists on the node (\`ls -l ${path}\`) and is spelled right`]
        : undefined,
    };
  },
};

const PERMISSION_ERROR = /PermissionError: \[Errno 13\] Permission denied: '([^']+)'/;
const PERMISSION_DENIED = /Permission denied(?::\s*'([^']+)')?/i;
// The distributed rendezvous binding a privileged port (below 1024) as an ordinary user:
// `The server socket has failed to bind to 0.0.0.0:97 (errno: 13 - Permission denied)`.
const BIND_DENIED = /failed to bind to \S*:(\d+) \(errno: 13 - Permission denied\)/;

/** The job's user may not read or write a path. */
export const PERMISSION_DENIED_CAUSE: CauseEntry = {
  id: "permission_denied",
  title: "permission denied",
  retry: "fails_again",
  retry_advice: "A retry will fail the same way until the permissions change: the job runs as " +
    "the same user with the same paths.",
  fixes: [
    "The job runs as the user the gpuctl agent runs as: give that user access (`chown`/`chmod`) " +
    "or write outputs under a directory it owns",
    "With Docker, check the container user and the mounted volumes' ownership",
    "For a script run directly (`./train.sh`), make it executable (`chmod +x`) or call it " +
    "through its interpreter",
  ],
  match(facts) {
    const hit = findLine(facts, [PERMISSION_ERROR]) ??
      findLine(facts, [PERMISSION_DENIED], { unless: /publickey/i });
    const denied126 = facts.exitCode === 126;
    if (!hit) {
      if (!denied126) return null;
      return {
        confidence: 0.6,
        likely_cause: "The command could not be executed (exit code 126: not executable or " +
          "permission denied)",
        evidence: present(exitCodeEvidence(facts)),
      };
    }
    const bind = BIND_DENIED.exec(hit.line.text);
    if (bind) {
      return {
        confidence: 0.85,
        likely_cause: `The distributed rendezvous may not bind port ${bind[1]}: ports below ` +
          `1024 are reserved to root: "${excerpt(hit.line.raw, 160)}"`,
        evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
        fixes: [
          "Set the rendezvous port to 1024 or above (`MASTER_PORT`, `--master_port`, " +
          "accelerate's `--main_process_port`; 29500 is the usual default)",
        ],
      };
    }
    const path = hit.match[1];
    return {
      confidence: hit.match[0].startsWith("PermissionError") ? 0.88 : 0.7,
      likely_cause: path
        ? `Permission denied on "${path}": the job's user may not access it`
        : `Permission denied: "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const SHM = [
  /insufficient shared memory \(shm\)/i,
  /unable to (?:write to|open shared memory object|mmap) .*<\/torch_/i,
  /Unexpected bus error encountered in worker/i,
  /DataLoader worker \(pid.*\) is killed by signal: Bus error/,
  /\/dev\/shm.*No space left on device/i,
  // NCCL's shared-memory transport between ranks of one node (`misc/shmutils.cc`,
  // `include/shm.h`): a /dev/shm too small, full or closed to the job. It decides over the
  // `unhandled system error` NCCL raises because of it.
  /NCCL WARN Error while creating shared memory segment/,
  /NCCL WARN Error: failed to extend \/dev\/shm\//,
];
const NCCL_SHM = /NCCL WARN/;
// A full device reported while multiprocessing creates a lock or semaphore: POSIX semaphores
// live in /dev/shm, so `[Errno 28] No space left on device` there is shared memory, not the
// disk (`_multiprocessing.SemLock(…)`, `ctx.Lock()` of a queue, joblib's check that warns
// "[Errno 28] No space left on device.  joblib will operate in serial mode").
const NO_SPACE = /\[Errno 28\]|No space left on device/i;
const SEMAPHORE =
  /SemLock|sem_open|multiprocessing[\\/]synchronize\.py|joblib[\\/]_multiprocessing_helpers|joblib will operate in serial mode|\bctx\.(?:R?Lock|(?:Bounded)?Semaphore)\(\)/;

// How far above the no-space line the semaphore's frame may be (the frames of a traceback).
const SEMAPHORE_NEAR = 6;

/**
 * A semaphore of multiprocessing that could not be created for want of space: a no-space
 * line that names the semaphore, or that follows a frame creating one.
 */
function semaphoreNoSpace(facts: FailureFacts): LineHit | null {
  const lines = facts.lines;
  for (let i = lines.length - 1; i >= 0; i--) {
    const match = NO_SPACE.exec(lines[i].text);
    if (!match) continue;
    const near = lines.slice(Math.max(0, i - SEMAPHORE_NEAR), i + 1);
    if (near.some((l) => SEMAPHORE.test(l.text))) return { line: lines[i], match };
  }
  return null;
}

// A bus error without DataLoader's report: the shell's `Bus error (core dumped)`, faulthandler's,
// UCX's `Caught signal 7 (Bus error …)`. With the process (or a launcher's child: torchrun's
// `exitcode  : -7`, `Signal 7 (SIGBUS)`) dying of SIGBUS, a training job's page that could not
// be backed is almost always shared memory: /dev/shm full (DataLoader workers, NCCL between the
// ranks of one node, a container's 64 MB default).
const BUS_ERROR_LINE =
  /^\s*Bus error\b|\bBus error\s+\(core dumped\)|Fatal Python error: Bus error|Caught signal 7 \(Bus error/;

/** DataLoader workers ran out of shared memory (/dev/shm), typical in containers. */
export const SHM_EXHAUSTED_CAUSE: CauseEntry = {
  id: "shm_exhausted",
  title: "shared memory exhausted",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration will fail the same way: the workers need " +
    "the same shared memory. Give it more or use fewer workers first.",
  fixes: [
    "With Docker, run with `--shm-size=16g` or `--ipc=host`",
    "Lower the DataLoader's `num_workers` (or set it to 0 to confirm)",
    "Check the size of /dev/shm on the node (`df -h /dev/shm`)",
  ],
  match(facts) {
    const hit = findLine(facts, SHM);
    if (!hit) {
      const sem = semaphoreNoSpace(facts);
      if (!sem) return busError(facts);
      return {
        confidence: 0.93,
        likely_cause: "multiprocessing could not create a lock or semaphore: they live in " +
          `/dev/shm, which is full or too small: "${excerpt(sem.line.raw, 160)}"`,
        fixes: [
          "The disk may have space: check /dev/shm (`df -h /dev/shm`), remove stale " +
          "`/dev/shm/sem.*` files left by killed runs, or give a container a larger " +
          "`--shm-size`",
        ],
        evidence: present(logEvidence(sem.line), exitCodeEvidence(facts)),
      };
    }
    const nccl = NCCL_SHM.test(hit.line.text);
    return {
      confidence: 0.93,
      likely_cause: nccl
        ? `NCCL could not create its shared memory segment in /dev/shm (too small, full or ` +
          `not writable for the job): "${excerpt(hit.line.raw, 160)}"`
        : `DataLoader workers ran out of shared memory (/dev/shm): ` +
          `"${excerpt(hit.line.raw, 160)}"`,
      fixes: nccl
        ? [
          "NCCL between ranks of one node: give the job a larger, writable /dev/shm, or set " +
          "`NCCL_SHM_DISABLE=1` in the job's env so NCCL does not use it (slower)",
        ]
        : undefined,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

/** A death by SIGBUS, or a bus error line, read as shared memory (most likely). */
function busError(facts: FailureFacts): CauseMatch | null {
  const killed = killedBy(facts, ["SIGBUS"]);
  const line = findLine(facts, [BUS_ERROR_LINE]);
  if (!killed && !line) return null;
  const child = facts.child?.signal === "SIGBUS" ? childName(facts) : null;
  return {
    confidence: line && killed ? 0.8 : 0.75,
    likely_cause: (child ? `The training process of ${child}` : "The process") +
      " died of a bus error (SIGBUS): in a training job, most likely shared memory (/dev/shm) " +
      "full or too small for DataLoader workers or for NCCL between the ranks of one node",
    evidence: present(line ? logEvidence(line.line) : null, killed),
    fixes: [
      "NCCL between ranks of one node uses /dev/shm too: give the job a larger /dev/shm, or set " +
      "`NCCL_SHM_DISABLE=1` in the job's env to confirm",
    ],
  };
}

const DISK_FULL = [
  /No space left on device(?::\s*'([^']+)')?/i,
  /\[Errno 28\]/,
  /Disk quota exceeded(?::\s*'([^']+)')?/i,
  /\[Errno 122\]/,
];
// torch.save into a full disk: the zip writer's `PytorchStreamWriter failed writing file
// data/3: file write failed` or `[enforce fail at inline_container.cc:…] . unexpected pos
// 190007680 vs 190007572`.
// The older serializer's `RuntimeError: write(): fd 29 failed with Input/output error`.
const WRITE_FAILED =
  /PytorchStreamWriter failed writing file|inline_container\.cc.*unexpected pos \d+ vs \d+|write\(\): fd \d+ failed with (?:Input\/output error|No space left)/;

/** The disk (or quota) filled up, usually while writing checkpoints. */
export const DISK_FULL_CAUSE: CauseEntry = {
  id: "disk_full",
  title: "disk full",
  retry: "fails_again",
  retry_advice: "A retry will fail the same way until space is freed: the run writes the same " +
    "amount of data to the same disk.",
  fixes: [
    "Check free space on the node (`df -h`) and on the checkpoint folder's filesystem",
    "Keep only the last N checkpoints (and the best one) instead of all of them",
    "Write checkpoints to a larger disk; move caches there too (`HF_HOME`, `TMPDIR`, " +
    "`TORCH_HOME`)",
    "With Docker, prune unused images and containers",
  ],
  match(facts) {
    if (semaphoreNoSpace(facts)) return null;
    const hit = findLine(facts, DISK_FULL, { unless: /<\/torch_|shared memory|\/dev\/shm/ });
    const weak = hit ? null : findLine(facts, [WRITE_FAILED]);
    const found = hit ?? weak;
    if (!found) return null;
    const path = found.match[1];
    const evidence: Evidence[] = present(logEvidence(found.line), exitCodeEvidence(facts));
    return {
      confidence: hit ? 0.92 : 0.88,
      likely_cause: hit
        ? `The disk is full${path ? ` (writing "${path}")` : ""}: ` +
          `"${excerpt(found.line.raw, 160)}"`
        : `Writing a file with torch.save failed, most likely because the disk is full: ` +
          `"${excerpt(found.line.raw, 160)}"`,
      evidence,
    };
  },
};

const NAN_LOG = [
  /\bloss (?:is|became|=|:)\s*nan\b/i,
  /\bloss\s*[|:=]?\s+nan\b/i,
  /\bnan loss\b/i,
  /\bnon-finite loss\b/i,
  /Loss is (?:nan|inf)/i,
  /returned nan values in its \d+th output/i,
  /Detected (?:NaN|inf)/i,
  // Frameworks that check for themselves and raise in their own words: detectron2's
  // `FloatingPointError: Loss became infinite or NaN`, Keras' TerminateOnNaN, TensorFlow's
  // check_numerics and its histogram summaries.
  /Loss became infinite or NaN/i,
  /FloatingPointError\b.*\b(?:nan|inf)/i,
  /Invalid loss, terminating training/,
  /Tensor had (?:NaN|Inf) values/,
  // TensorFlow's histogram summaries refuse NaN weights or activations.
  /\bNan in summary histogram\b/i,
  /(?:NaN|Inf) (?:or (?:Inf|NaN) )?found in input tensor/,
];

/** Training diverged: the loss became NaN or infinite and the code stopped. */
export const NAN_LOSS_CAUSE: CauseEntry = {
  id: "nan_loss",
  title: "loss became NaN",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration and seed will most likely diverge the " +
    "same way; change the learning rate or precision settings first.",
  fixes: [
    "Lower the learning rate (or lengthen its warm-up)",
    "Clip gradients (`torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)`)",
    "Train in bf16 instead of fp16, or keep the loss scaler (`GradScaler`) when using fp16",
    "Look for log(0), division by zero or bad samples in the data around the step it happened",
    "Enable `torch.autograd.set_detect_anomaly(True)` in a short run to find the operation",
  ],
  match(facts) {
    const event = facts.input.events.find((e) => e.type === "LOSS_NAN");
    // The error that stopped the run (anomaly detection's `returned nan values`, a
    // framework's own check) before a progress line that printed the NaN loss, which follows.
    const hit = findLine(facts, NAN_LOG, { decidingFirst: true });
    if (!event && !hit) return null;
    const printed = findLine(facts, NAN_LOG);
    const evidence: Evidence[] = present(
      event ? { kind: "event", detail: event.message } : null,
      hit ? logEvidence(hit.line) : null,
      printed && printed.line !== hit?.line ? logEvidence(printed.line) : null,
      exitCodeEvidence(facts),
    );
    const confidence = event && hit ? 0.88 : hit ? 0.82 : 0.75;
    return {
      confidence,
      likely_cause: event
        ? `Training diverged: ${event.message}`
        : `Training diverged: the loss became NaN: "${excerpt(hit!.line.raw, 160)}"`,
      evidence,
    };
  },
};

// A compiled extension built against another version of its host library: `undefined symbol`
// on import, a C++ runtime that is too old.
const ABI = [
  /\.so[^:\s]*: undefined symbol: (\S+)/,
  /undefined symbol: (\S+)/,
  /version `((?:GLIBC|GLIBCXX|CXXABI)_[\d.]+)' not found/,
  // An extension linked against libraries of another PyTorch build (`libtorch_cuda_cu.so` is
  // gone since 1.13; `libc10_cuda.so` is absent from a CPU-only build), or imported before
  // torch loaded them.
  /((?:libtorch(?:_cuda(?:_cu|_cpp)?|_cpu|_python)?|libc10(?:_cuda)?)\.so): cannot open shared object file/,
];

/** A compiled extension does not fit the installed library it was built against. */
export const ABI_MISMATCH_CAUSE: CauseEntry = {
  id: "abi_mismatch",
  title: "compiled extension does not fit (ABI)",
  retry: "fails_again",
  retry_advice: "A retry with the same environment will fail the same way: the compiled " +
    "extension and the library it links against stay the same. Rebuild or reinstall first.",
  fixes: [
    "Rebuild the extension against the installed PyTorch (`pip install --no-build-isolation " +
    "--force-reinstall --no-cache-dir <package>`, or `python setup.py clean && pip install .`)",
    "Or install the PyTorch version the extension's wheel was built for (torchvision, " +
    "torchaudio, flash-attn, mmcv, apex and torch-scatter wheels each name the torch and CUDA " +
    "versions they need)",
    "`import torch` before importing the extension: its symbols come from torch's libraries",
  ],
  match(facts) {
    const hit = findLine(facts, ABI);
    if (!hit) return null;
    const lib = /([\w.+-]+\.so)\b/.exec(hit.line.text)?.[1];
    return {
      confidence: 0.94,
      likely_cause: `A compiled extension${lib ? ` (${lib})` : ""} was built against another ` +
        `version of the library it links to: "${excerpt(hit.line.raw, 200)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const EMFILE = [
  /\[Errno 24\]/,
  /Too many open files/i,
  /received 0 items of ancdata/,
  /\bEMFILE\b/,
];

/** The process hit its limit of open file descriptors (often DataLoader workers' tensors). */
export const TOO_MANY_OPEN_FILES_CAUSE: CauseEntry = {
  id: "too_many_open_files",
  title: "too many open files",
  retry: "fails_again",
  retry_advice: "A retry with the same configuration will fail the same way: it opens as many " +
    "files under the same limit. Raise the limit or open fewer first.",
  fixes: [
    "Share DataLoader tensors through files instead of descriptors: " +
    "`torch.multiprocessing.set_sharing_strategy('file_system')` at the top of the script",
    "Raise the open-file limit: jobs inherit the agent's (`LimitNOFILE=` in its systemd unit, " +
    "or `ulimit -n` where it starts)",
    "Lower `num_workers` and make the dataset close the files it opens in `__getitem__`",
  ],
  match(facts) {
    const hit = findLine(facts, EMFILE);
    if (!hit) return null;
    return {
      confidence: 0.94,
      likely_cause: `The process ran out of file descriptors: "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const PICKLING = [
  /Can't (?:pickle|get) local object '([^']+)'/,
  /Can't pickle <(?:function|lambda)[^>]*>/,
  /(?:PicklingError|TypeError): (?:cannot|can't) pickle/i,
  /cannot pickle '[\w.]+' object/,
  /can't pickle [\w.]+ objects/,
];

/** A DataLoader (or another multiprocessing user) could not send an object to a worker. */
export const DATALOADER_PICKLING_CAUSE: CauseEntry = {
  id: "dataloader_pickling",
  title: "object cannot be pickled for a worker process",
  retry: "fails_again",
  retry_advice: "A retry will fail the same way: the same object is sent to the workers and " +
    "still cannot be pickled. Change the code first.",
  fixes: [
    "Define `collate_fn`, `worker_init_fn`, transforms and dataset classes at module level, " +
    "not as lambdas or functions nested in another function",
    "Set the DataLoader's `num_workers=0` to confirm (nothing is pickled then)",
    "Keep unpicklable members (open files, locks, database or HTTP clients) out of the " +
    "dataset, or open them lazily in each worker",
    "Where processes are started with spawn (macOS, Windows), guard the entry point with " +
    '`if __name__ == "__main__":`',
  ],
  match(facts) {
    const hit = findLine(facts, PICKLING);
    if (!hit) return null;
    const what = /local object '([^']+)'/.exec(hit.line.text)?.[1];
    return {
      confidence: 0.92,
      likely_cause: (what ? `"${what}" ` : "An object ") +
        "could not be pickled to be sent to a worker process (a DataLoader with " +
        `num_workers > 0, or multiprocessing): "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};

const RECURSION = [
  /RecursionError: maximum recursion depth exceeded/,
  /maximum recursion depth exceeded/,
  /Cannot recover from stack overflow/,
];

/** Python's recursion limit was exceeded (and the abort that can follow it). */
export const RECURSION_ERROR_CAUSE: CauseEntry = {
  id: "recursion_error",
  title: "maximum recursion depth exceeded",
  retry: "fails_again",
  retry_advice: "A retry with the same code and inputs will fail the same way: the same calls " +
    "recurse as deep again. Fix the recursion first.",
  fixes: [
    "Read the repeating frames of the traceback: a `__getattr__` or property that calls " +
    "itself, a `__getitem__` that retries on a bad sample by calling itself, a module wrapping " +
    "itself",
    "Replace deep recursion with a loop; raise `sys.setrecursionlimit()` only for a depth " +
    "that is known and bounded",
  ],
  match(facts) {
    const hit = findLine(facts, RECURSION);
    if (!hit) return null;
    return {
      confidence: 0.93,
      likely_cause: `The code recursed past Python's limit: "${excerpt(hit.line.raw, 160)}"`,
      evidence: present(logEvidence(hit.line), exitCodeEvidence(facts)),
    };
  },
};
