/**
 * Host readings for telemetry: CPU use from the deltas of `os.cpus()` times, memory from
 * `Deno.systemMemoryInfo()`, free disk space through `statfs`. No `/proc` reads: under the
 * agent's permissions (everything but `--allow-all`) Deno refuses them.
 */
import { cpus } from "node:os";
import { statfsSync } from "node:fs";

const MIB = 1024 * 1024;

/** Cumulative CPU time of all CPUs, in ms. */
export interface CpuTimes {
  idle: number;
  total: number;
}

/** Sums per-CPU times (as `os.cpus()` gives them) into one reading. */
export function sumCpuTimes(
  perCpu: readonly {
    times: { user: number; nice: number; sys: number; idle: number; irq: number };
  }[],
): CpuTimes | null {
  if (perCpu.length === 0) return null;
  let idle = 0;
  let total = 0;
  for (const { times } of perCpu) {
    idle += times.idle;
    total += times.user + times.nice + times.sys + times.idle + times.irq;
  }
  return { idle, total };
}

/** Busy share of all CPUs between two readings, 0–100; null when no time passed. */
export function cpuPercent(before: CpuTimes, after: CpuTimes): number | null {
  const total = after.total - before.total;
  const idle = after.idle - before.idle;
  if (total <= 0) return null;
  return Math.round(Math.min(100, Math.max(0, (1 - idle / total) * 100)) * 10) / 10;
}

/** Free and total bytes of the file system holding a path. */
export interface DiskUsage {
  freeBytes: number;
  totalBytes: number;
}

/** Free space for unprivileged users (what a job can write) of `path`'s file system; null when unreadable. */
export function diskUsage(path: string): DiskUsage | null {
  try {
    const fs = statfsSync(path);
    return { freeBytes: fs.bavail * fs.bsize, totalBytes: fs.blocks * fs.bsize };
  } catch {
    return null;
  }
}

/** Bytes → MiB, rounded. */
export function toMb(bytes: number): number {
  return Math.round(bytes / MIB);
}

/** Reads the host; keeps the previous CPU reading to compute the next percentage. */
export class HostReader {
  #previous: CpuTimes | null = null;

  /** CPU use since the previous call (null on the first call, or when unreadable). */
  cpuPct(): number | null {
    let now: CpuTimes | null = null;
    try {
      now = sumCpuTimes(cpus());
    } catch {
      // No --allow-sys, or an OS that does not say.
    }
    const before = this.#previous;
    this.#previous = now;
    return before && now ? cpuPercent(before, now) : null;
  }

  /** Memory in MiB: used = total − available. */
  memory(): { totalMb: number; usedMb: number } | null {
    try {
      const info = Deno.systemMemoryInfo();
      return { totalMb: toMb(info.total), usedMb: toMb(info.total - info.available) };
    } catch {
      return null;
    }
  }

  /** Logical CPUs. */
  cpuCount(): number {
    return navigator.hardwareConcurrency ?? 0;
  }
}
