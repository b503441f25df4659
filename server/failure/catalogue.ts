/**
 * The failure catalogue: every cause in the order they are tried, from the most specific
 * (GPU memory, NCCL, the hub) to the fallbacks (a Python exception, a nonzero exit).
 */
import type { CauseEntry } from "./cause.ts";
import {
  CUDA_DEVICE_ERROR_CAUSE,
  CUDA_OOM_CAUSE,
  CUDA_VERSION_MISMATCH_CAUSE,
  CUDNN_ERROR_CAUSE,
  GPU_HARDWARE_ERROR_CAUSE,
  NO_CUDA_DEVICE_CAUSE,
} from "./causes_cuda.ts";
import {
  CONNECTION_RESET_CAUSE,
  DDP_UNUSED_PARAMETERS_CAUSE,
  NCCL_ERROR_CAUSE,
  NCCL_TIMEOUT_CAUSE,
  PORT_IN_USE_CAUSE,
} from "./causes_distributed.ts";
import {
  DEVICE_MISMATCH_CAUSE,
  SHAPE_MISMATCH_CAUSE,
  STATE_DICT_MISMATCH_CAUSE,
} from "./causes_tensors.ts";
import { NONZERO_EXIT_CAUSE, PYTHON_EXCEPTION_CAUSE } from "./causes_fallback.ts";
import {
  ABORTED_CAUSE,
  AGENT_RESTART_CAUSE,
  CANCELLED_CAUSE,
  COMMAND_NOT_FOUND_CAUSE,
  DATALOADER_WORKER_KILLED_CAUSE,
  DISPATCH_FAILED_CAUSE,
  HOST_OOM_CAUSE,
  INTERRUPTED_CAUSE,
  KILLED_CAUSE,
  NODE_LOST_CAUSE,
  SEGFAULT_CAUSE,
  TERMINATED_CAUSE,
} from "./causes_process.ts";
import { HUB_AUTH_CAUSE, HUB_UNREACHABLE_CAUSE } from "./causes_hub.ts";
import {
  ABI_MISMATCH_CAUSE,
  DATALOADER_PICKLING_CAUSE,
  DISK_FULL_CAUSE,
  FILE_NOT_FOUND_CAUSE,
  MODULE_NOT_FOUND_CAUSE,
  NAN_LOSS_CAUSE,
  PERMISSION_DENIED_CAUSE,
  RECURSION_ERROR_CAUSE,
  SHM_EXHAUSTED_CAUSE,
  TOO_MANY_OPEN_FILES_CAUSE,
} from "./causes_python.ts";

/**
 * Every known cause, one entry each. The highest-confidence match wins; on a tie the entry
 * listed first wins, so the list runs from the most specific to the most generic. To add a
 * cause: write its entry beside its peers (`causes_*.ts`), list it here, and add a test with a
 * real log tail.
 */
export const CATALOGUE: readonly CauseEntry[] = Object.freeze([
  CANCELLED_CAUSE,
  NODE_LOST_CAUSE,
  AGENT_RESTART_CAUSE,
  CUDA_OOM_CAUSE,
  SHM_EXHAUSTED_CAUSE,
  TOO_MANY_OPEN_FILES_CAUSE,
  CUDA_VERSION_MISMATCH_CAUSE,
  STATE_DICT_MISMATCH_CAUSE,
  GPU_HARDWARE_ERROR_CAUSE,
  DISK_FULL_CAUSE,
  ABI_MISMATCH_CAUSE,
  HUB_AUTH_CAUSE,
  HUB_UNREACHABLE_CAUSE,
  DDP_UNUSED_PARAMETERS_CAUSE,
  DATALOADER_PICKLING_CAUSE,
  RECURSION_ERROR_CAUSE,
  DATALOADER_WORKER_KILLED_CAUSE,
  MODULE_NOT_FOUND_CAUSE,
  COMMAND_NOT_FOUND_CAUSE,
  NO_CUDA_DEVICE_CAUSE,
  DEVICE_MISMATCH_CAUSE,
  SHAPE_MISMATCH_CAUSE,
  NCCL_TIMEOUT_CAUSE,
  PORT_IN_USE_CAUSE,
  CUDA_DEVICE_ERROR_CAUSE,
  CUDNN_ERROR_CAUSE,
  FILE_NOT_FOUND_CAUSE,
  PERMISSION_DENIED_CAUSE,
  NCCL_ERROR_CAUSE,
  NAN_LOSS_CAUSE,
  CONNECTION_RESET_CAUSE,
  HOST_OOM_CAUSE,
  SEGFAULT_CAUSE,
  DISPATCH_FAILED_CAUSE,
  ABORTED_CAUSE,
  INTERRUPTED_CAUSE,
  TERMINATED_CAUSE,
  KILLED_CAUSE,
  PYTHON_EXCEPTION_CAUSE,
  NONZERO_EXIT_CAUSE,
]);

/** Entries that describe the failure's shape rather than a cause: used when nothing else fits. */
export const FALLBACK_CAUSE_IDS: ReadonlySet<string> = new Set([
  PYTHON_EXCEPTION_CAUSE.id,
  NONZERO_EXIT_CAUSE.id,
]);

/** The catalogue entry with this id, for a caller that stored a diagnosis's `cause_id`. */
export function causeById(id: string): CauseEntry | undefined {
  return CATALOGUE.find((entry) => entry.id === id);
}
