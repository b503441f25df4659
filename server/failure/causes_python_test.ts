import assert from "node:assert/strict";
import { diagnoseFailure } from "./diagnose_failure.ts";
import { expectDiagnosis, failed } from "./_test_input.ts";

const NO_TIMM = `
Traceback (most recent call last):
  File "/srv/jobs/vision/train.py", line 7, in <module>
    import timm
ModuleNotFoundError: No module named 'timm'
`;

const NO_CV2 = `
Traceback (most recent call last):
  File "/srv/jobs/vision/train.py", line 3, in <module>
    from data.augment import build_transforms
  File "/srv/jobs/vision/data/augment.py", line 1, in <module>
    import cv2
ModuleNotFoundError: No module named 'cv2'
`;

const CANNOT_IMPORT = `
Traceback (most recent call last):
  File "/home/ana/proj/sft.py", line 5, in <module>
    from transformers import LlamaForCausalLM, AutoTokenizer
ImportError: cannot import name 'LlamaForCausalLM' from 'transformers' (/home/ana/.venv/lib/python3.10/site-packages/transformers/__init__.py)
`;

const DATA_MISSING = `
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 88, in <module>
    train_ds = datasets.ImageFolder(args.data_dir, transform=tf)
  File "/home/ana/.venv/lib/python3.10/site-packages/torchvision/datasets/folder.py", line 309, in __init__
    super().__init__(
  File "/home/ana/.venv/lib/python3.10/site-packages/torchvision/datasets/folder.py", line 144, in __init__
    classes, class_to_idx = self.find_classes(self.root)
  File "/home/ana/.venv/lib/python3.10/site-packages/torchvision/datasets/folder.py", line 40, in find_classes
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
FileNotFoundError: [Errno 2] No such file or directory: '/data/imagenet/train'
`;

const CHECKPOINT_MISSING = `
Resuming from checkpoints/run-17/step_4000.pt
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 131, in <module>
    state = torch.load(args.resume, map_location="cpu")
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/serialization.py", line 997, in load
    with _open_file_like(f, 'rb') as opened_file:
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/serialization.py", line 444, in _open_file_like
    return _open_file(name_or_buffer, mode)
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/serialization.py", line 425, in __init__
    super().__init__(open(name, mode))
FileNotFoundError: [Errno 2] No such file or directory: 'checkpoints/run-17/step_4000.pt'
`;

const SCRIPT_MISSING = `
python3: can't open file '/home/ana/proj/trian.py': [Errno 2] No such file or directory
`;

const PERMISSION = `
Epoch 3 done, saving to /mnt/shared/models
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 240, in <module>
    torch.save(model.state_dict(), f"{args.out}/model.pt")
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/serialization.py", line 627, in save
    with _open_zipfile_writer(f) as opened_zipfile:
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/serialization.py", line 501, in _open_zipfile_writer
    return container(name_or_buffer)
PermissionError: [Errno 13] Permission denied: '/mnt/shared/models/model.pt'
`;

const DISK_FULL = `
Saving checkpoint to /scratch/ckpt/step_20000.pt
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 255, in <module>
    save_checkpoint(state, path)
  File "/home/ana/proj/utils.py", line 31, in save_checkpoint
    with open(path, "wb") as f:
OSError: [Errno 28] No space left on device: '/scratch/ckpt/step_20000.pt'
`;

const STREAM_WRITER = `
Saving checkpoint to /scratch/ckpt/step_30000.pt
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 255, in <module>
    torch.save(state, path)
  File "/home/ana/.venv/lib/python3.11/site-packages/torch/serialization.py", line 628, in save
    _save(obj, opened_zipfile, pickle_module, pickle_protocol, _disable_byteorder_record)
RuntimeError: [enforce fail at inline_container.cc:424] . PytorchStreamWriter failed writing file data/71: file write failed
`;

const SHM = `
ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1132, in _try_get_data
    data = self._data_queue.get(timeout=timeout)
  File "/opt/conda/lib/python3.10/multiprocessing/queues.py", line 113, in get
    if not self._poll(timeout):
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/_utils/signal_handling.py", line 66, in handler
    _error_if_any_worker_fails()
RuntimeError: DataLoader worker (pid 2371) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory. Please try to raise your shared memory limit.

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/workspace/train.py", line 150, in <module>
    for batch in loader:
  File "/opt/conda/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1145, in _try_get_data
    raise RuntimeError(f'DataLoader worker (pid(s) {pids_str}) exited unexpectedly') from e
RuntimeError: DataLoader worker (pid(s) 2371) exited unexpectedly
`;

const NAN_RAISED = `
step 4100 | loss 2.8812 | lr 3.0e-04 | grad_norm 1.93
step 4110 | loss 7.5520 | lr 3.0e-04 | grad_norm 88.10
step 4120 | loss nan | lr 3.0e-04 | grad_norm nan
Traceback (most recent call last):
  File "/home/ana/proj/train.py", line 301, in <module>
    train()
  File "/home/ana/proj/train.py", line 266, in train
    raise FloatingPointError(f"loss is nan at step {step}")
FloatingPointError: loss is nan at step 4120
`;

// torch.autograd.detect_anomaly() raising on the backward pass of a loss printed as nan
// (tests/frameworks/failures/nan_loss.py).
const NAN_ANOMALY = `
step 0 loss nan
Traceback (most recent call last):
  File "/work/nan_loss.py", line 19, in <module>
    main()
  File "/work/nan_loss.py", line 14, in main
    loss.backward()
  File "/venv/lib/python3.11/site-packages/torch/_tensor.py", line 625, in backward
    torch.autograd.backward(
RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.
`;

Deno.test("diagnoseFailure() recognises environment and file failures from real log tails (table)", () => {
  const cases = [
    {
      name: "missing module quoted",
      input: failed(NO_TIMM),
      want: {
        cause: "module_not_found",
        line: 1003,
        likely: /no module "timm"/,
        retry: "fails_again" as const,
        // No pip name is guessed: "timm" is in no known mapping.
        fix: /^Install the package that provides module "timm"/,
      },
    },
    {
      name: "import name differs from the pip package",
      input: failed(NO_CV2),
      want: {
        cause: "module_not_found",
        line: 1005,
        likely: /"cv2"/,
        retry: "fails_again" as const,
        fix: /opencv-python/,
      },
    },
    {
      name: "cannot import name: wrong library version",
      input: failed(CANNOT_IMPORT),
      want: {
        cause: "module_not_found",
        line: 1003,
        likely: /"LlamaForCausalLM" cannot be imported from "transformers"/,
        retry: "fails_again" as const,
      },
    },
    {
      name: "missing data folder quoted",
      input: failed(DATA_MISSING),
      want: {
        cause: "file_not_found",
        line: 1009,
        likely: /^The data path "\/data\/imagenet\/train" does not exist on the node$/,
        retry: "fails_again" as const,
        fix: /working_dir/,
      },
    },
    {
      name: "missing checkpoint quoted",
      input: failed(CHECKPOINT_MISSING),
      want: {
        cause: "file_not_found",
        line: 1010,
        likely: /^The checkpoint "checkpoints\/run-17\/step_4000\.pt" does not exist/,
        retry: "fails_again" as const,
        fix: /shared storage/,
      },
    },
    {
      name: "missing script: wrong working_dir or a typo",
      input: failed(SCRIPT_MISSING, { exit_code: 2 }),
      want: {
        cause: "file_not_found",
        line: 1000,
        likely: /script "\/home\/ana\/proj\/trian\.py"/,
        retry: "fails_again" as const,
      },
    },
    {
      name: "permission denied quoted",
      input: failed(PERMISSION),
      want: {
        cause: "permission_denied",
        line: 1008,
        likely: /"\/mnt\/shared\/models\/model\.pt"/,
        retry: "fails_again" as const,
        fix: /chown/,
      },
    },
    {
      name: "no space left on device",
      input: failed(DISK_FULL),
      want: {
        cause: "disk_full",
        line: 1006,
        likely: /writing "\/scratch\/ckpt\/step_20000\.pt"/,
        retry: "fails_again" as const,
        fix: /df -h/,
      },
    },
    {
      name: "torch.save's stream writer failing (a full disk without the words)",
      input: failed(STREAM_WRITER),
      want: { cause: "disk_full", line: 1006, retry: "fails_again" as const },
    },
    {
      name: "DataLoader bus error: shared memory",
      input: failed(SHM),
      want: {
        cause: "shm_exhausted",
        line: 1000,
        retry: "fails_again" as const,
        fix: /--shm-size/,
      },
    },
    {
      name: "loss NaN in the log",
      input: failed(NAN_RAISED),
      // The raised message outranks the metric line above it.
      want: { cause: "nan_loss", line: 1008, retry: "fails_again" as const, fix: /Clip gradients/ },
    },
    {
      name: "anomaly detection raising on a NaN, after a progress line that printed it",
      input: failed(NAN_ANOMALY),
      // The error that stopped the run first, though a weaker pattern matches it.
      want: { cause: "nan_loss", line: 1008, retry: "fails_again" as const },
    },
  ];
  for (const { name, input, want } of cases) expectDiagnosis(name, input, want);
});

Deno.test("diagnoseFailure() takes a NaN loss from the LOSS_NAN event, with the log as support", () => {
  const event = { type: "LOSS_NAN", message: 'Loss "train/loss" is NaN at step 4120' };
  const both = diagnoseFailure(failed(NAN_RAISED, { events: [event] }));
  assert.equal(both.cause_id, "nan_loss");
  assert.equal(both.likely_cause, 'Training diverged: Loss "train/loss" is NaN at step 4120');
  assert.deepEqual(both.evidence.slice(0, 2).map((e) => [e.kind, e.line_no]), [
    ["event", undefined],
    ["log", 1008],
  ]);
  const eventOnly = diagnoseFailure(failed("", { events: [event] }));
  assert.equal(eventOnly.cause_id, "nan_loss");
  assert.ok(eventOnly.confidence < both.confidence);
});

Deno.test("diagnoseFailure() prefers shared memory over a full disk when the full device is /dev/shm", () => {
  const d = diagnoseFailure(failed(`
RuntimeError: unable to write to file </torch_1093_3190469637_0>: No space left on device (28)
`));
  assert.equal(d.cause_id, "shm_exhausted");
});

// multiprocessing's lock in a container with a 1 MB /dev/shm (python/cpython#93253), and the
// same with only joblib's warning before a cut traceback: shared memory, not the disk.
const SEMLOCK_NO_SPACE = `
  File "/usr/local/lib/python3.8/multiprocessing/synchronize.py", line 57, in __init__
    sl = self._semlock = _multiprocessing.SemLock(
OSError: [Errno 28] No space left on device
`;

Deno.test("diagnoseFailure() reads a semaphore that cannot be created for want of space as /dev/shm", () => {
  expectDiagnosis("SemLock", failed(`Traceback (most recent call last):${SEMLOCK_NO_SPACE}`), {
    cause: "shm_exhausted",
    likely: /lock or semaphore/,
    retry: "fails_again",
  });
  // A full disk is still the disk.
  expectDiagnosis(
    "torch.save on a full disk",
    failed(
      'Traceback (most recent call last):\n  File "t.py", line 9, in save\n    torch.save(m, p)\nOSError: [Errno 28] No space left on device',
    ),
    { cause: "disk_full", retry: "fails_again" },
  );
});

// torchrun's report of ranks that died of SIGBUS (Topdu/OpenOCR#71), and the shell's report.
const TORCHRUN_SIGBUS = `
Root Cause (first observed failure):
[0]:
  time      : 2024-12-31_16:45:52
  host      : server
  rank      : 0 (local_rank: 0)
  exitcode  : -7 (pid: 467397)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 467397
`;

Deno.test("diagnoseFailure() reads a death by SIGBUS as shared memory, most likely", () => {
  const d = expectDiagnosis("torchrun SIGBUS", failed(TORCHRUN_SIGBUS), {
    cause: "shm_exhausted",
    likely: /rank 0 .*bus error \(SIGBUS\).*most likely shared memory/,
    retry: "fails_again",
    fix: /NCCL_SHM_DISABLE/,
  });
  assert.ok(d.confidence < 0.93, "weaker than a message that names shared memory");
  expectDiagnosis("shell", failed("Bus error (core dumped)", { exit_code: 135 }), {
    cause: "shm_exhausted",
    line: 1000,
    retry: "fails_again",
  });
});
