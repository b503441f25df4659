// Reads the kernel's OOM-kill counter of the memory cgroup a process runs in, to tell
// "killed by SIGKILL from the OOM killer" from any other SIGKILL.

import { readKernelFile } from "./_kernel_files.ts";

/** Where a cgroup's counter is and what it read when the attempt started. */
export interface OomCounter {
  /** `memory.events` (cgroup v2) or `memory.oom_control` (v1); both have `oom_kill N`. */
  file: string;
  base: number;
}

/** Parses `/proc/<pid>/cgroup` into the candidate counter files, v1 memory first. */
export function counterFiles(cgroupText: string, root = "/sys/fs/cgroup"): string[] {
  const v1: string[] = [];
  const v2: string[] = [];
  for (const line of cgroupText.split("\n")) {
    const [id, controllers, path] = line.split(":", 3);
    if (path === undefined) continue;
    if (controllers.split(",").includes("memory")) {
      v1.push(`${root}/memory${path}/memory.oom_control`);
    } else if (id === "0" && controllers === "") {
      const rel = path === "/" ? "" : path;
      v2.push(`${root}${rel}/memory.events`, `${root}/unified${rel}/memory.events`);
    }
  }
  return [...v1, ...v2];
}

function readOomKills(file: string): number | null {
  const text = readKernelFile(file);
  const match = text === null ? null : /^oom_kill (\d+)$/m.exec(text);
  return match ? Number(match[1]) : null;
}

/** The counter of `pid`'s memory cgroup now, or null when the kernel does not expose it. */
export function openOomCounter(pid: number): OomCounter | null {
  const text = readKernelFile(`/proc/${pid}/cgroup`);
  if (text === null) return null;
  for (const file of counterFiles(text)) {
    const base = readOomKills(file);
    if (base !== null) return { file, base };
  }
  return null;
}

/** Whether the OOM killer struck since `counter` was opened; null when unreadable. */
export function oomKilledSince(counter: OomCounter | null): boolean | null {
  if (counter === null) return null;
  const now = readOomKills(counter.file);
  return now === null ? null : now > counter.base;
}
