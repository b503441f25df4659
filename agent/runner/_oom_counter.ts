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

/**
 * The OOM-kill counters of every memory cgroup an attempt's processes were seen in. A job may
 * move itself (or a worker) into another cgroup after launch (systemd-run, a container
 * runtime, a launcher that makes one per rank): an OOM kill there counts in that cgroup only.
 * Each cgroup's counter is read when it is first seen; a rise since then is an OOM kill. A
 * process's cgroup is read again on every scan: a process first seen in the launch cgroup may
 * move itself later (one small read per live process per scan).
 */
export class OomWatch {
  readonly #counters = new Map<string, OomCounter>();
  /** The `/proc/<pid>/cgroup` text each live process had at the last scan. */
  #cgroupOf = new Map<number, string>();

  readonly #readCgroup: (pid: number) => string | null;
  readonly #root: string;

  /**
   * Starts from the counter read at launch (or kept across a reattach). `readCgroup` and
   * `root` (the cgroup file system) are for tests.
   */
  constructor(
    initial: OomCounter | null,
    readCgroup = (pid: number) => readKernelFile(`/proc/${pid}/cgroup`),
    root = "/sys/fs/cgroup",
  ) {
    if (initial) this.#counters.set(initial.file, initial);
    this.#readCgroup = readCgroup;
    this.#root = root;
  }

  /**
   * Notes the cgroups the live processes (from a process-tree scan) are in now, following
   * any process into a cgroup not seen before.
   */
  observe(pids: readonly number[]): void {
    const now = new Map<number, string>();
    for (const pid of pids) {
      const text = this.#readCgroup(pid);
      if (text === null) continue;
      now.set(pid, text);
      if (this.#cgroupOf.get(pid) === text) continue;
      for (const file of counterFiles(text, this.#root)) {
        if (this.#counters.has(file)) break;
        const base = readOomKills(file);
        if (base === null) continue;
        this.#counters.set(file, { file, base });
        break;
      }
    }
    this.#cgroupOf = now;
  }

  /** The cgroups followed (the launch one first). */
  counters(): OomCounter[] {
    return [...this.#counters.values()];
  }

  /** Whether any followed counter rose; null when none could be read. */
  killedSince(): boolean | null {
    let readable = false;
    for (const counter of this.#counters.values()) {
      const rose = oomKilledSince(counter);
      if (rose === true) return true;
      if (rose === false) readable = true;
    }
    return readable ? false : null;
  }
}
