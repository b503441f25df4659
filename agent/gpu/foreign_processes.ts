/**
 * Finds GPU processes that no gpuctl job owns: someone's notebook or a stray training
 * run holding memory on a GPU the scheduler thinks is free.
 */
import type { GpuSample } from "./types.ts";

/** A process on a GPU that is not part of any job the agent runs. */
export interface ForeignProcess {
  gpu_index: number;
  pid: number;
  used_mb: number | null;
}

/**
 * The processes in `samples` whose pid is not in `ownedPids`, ordered by GPU index, then
 * pid. `ownedPids` must hold every pid of every job's process tree (children such as
 * DataLoader or torchrun workers open their own CUDA contexts), in the pid namespace NVML
 * reports (the host's).
 */
export function findForeignProcesses(
  samples: readonly GpuSample[],
  ownedPids: ReadonlySet<number>,
): ForeignProcess[] {
  const foreign: ForeignProcess[] = [];
  for (const sample of samples) {
    for (const p of sample.processes) {
      if (!ownedPids.has(p.pid)) {
        foreign.push({ gpu_index: sample.index, pid: p.pid, used_mb: p.used_mb });
      }
    }
  }
  return foreign.sort((a, b) => a.gpu_index - b.gpu_index || a.pid - b.pid);
}
