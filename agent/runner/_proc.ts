// Reads /proc to follow the processes of one attempt: the wrapper, its process group and
// every descendant ever seen, even one that left the group with setsid(). A pid is only
// trusted while its start time (field 22 of /proc/<pid>/stat) matches what was recorded,
// so a pid reused by an unrelated process is never signalled.

import { readAllStats, readKernelFile } from "./_kernel_files.ts";

/** The fields of `/proc/<pid>/stat` the runner uses. */
export interface ProcStat {
  pid: number;
  state: string;
  ppid: number;
  pgrp: number;
  session: number;
  /** Clock ticks after boot (field 22); with the pid, it names one process for good. */
  startTime: number;
}

/** Parses one `/proc/<pid>/stat` line; null when it does not look like one. */
export function parseStat(text: string): ProcStat | null {
  // comm (field 2) may hold spaces and parentheses: the fields resume after the last ")".
  const close = text.lastIndexOf(")");
  if (close < 0) return null;
  const pid = Number.parseInt(text, 10);
  if (!Number.isInteger(pid)) return null;
  // The starts of the fields after comm, up to start time (the 20th): read in place, as
  // every scan parses the stat of each process an attempt knows.
  const starts: number[] = [];
  for (let at = close + 2; starts.length < 20 && at > close; at = text.indexOf(" ", at) + 1) {
    starts.push(at);
  }
  if (starts.length < 20) return null;
  const field = (i: number) => text.slice(starts[i], starts[i + 1] - 1);
  const startEnd = text.indexOf(" ", starts[19]);
  return {
    pid,
    state: text[starts[0]],
    ppid: Number(field(1)),
    pgrp: Number(field(2)),
    session: Number(field(3)),
    startTime: Number(text.slice(starts[19], startEnd < 0 ? undefined : startEnd)),
  };
}

/** The stat of one process, or null when there is none (or only a zombie). */
export function readStat(pid: number): ProcStat | null {
  const text = readKernelFile(`/proc/${pid}/stat`);
  if (text === null) return null;
  const stat = parseStat(text);
  // A zombie (Z) or dead (X) entry has finished running; only its parent can reap it.
  if (!stat || stat.state === "Z" || stat.state === "X") return null;
  return stat;
}

/** Whether `pid` is running and is still the process that started at `startTime`. */
export function isSameProcess(pid: number, startTime: number): boolean {
  const stat = readStat(pid);
  return stat !== null && stat.startTime === startTime;
}

/** Every running process on the host at one moment, with each pid's children. */
export interface ProcessSnapshot {
  all: ProcStat[];
  byPid: Map<number, ProcStat>;
  children: Map<number, ProcStat[]>;
  /** Each process group's members. */
  groups: Map<number, ProcStat[]>;
}

let shared: { lines: string[]; snapshot: ProcessSnapshot } | null = null;
/** Each line of the last walk, parsed: a walk mostly hands back the lines it read before. */
let parsed = new Map<string, ProcStat | null>();

/**
 * Every running process on the host; `fresh` skips the shared, slightly older walk. The
 * snapshot is parsed once per walk and shared by every attempt's scan: treat it as read-only.
 */
export function listProcesses(fresh = false): ProcessSnapshot {
  const lines = readAllStats(fresh ? 0 : undefined);
  if (shared?.lines === lines) return shared.snapshot;
  const all: ProcStat[] = [];
  const byPid = new Map<number, ProcStat>();
  const children = new Map<number, ProcStat[]>();
  const groups = new Map<number, ProcStat[]>();
  const parsedNow = new Map<string, ProcStat | null>();
  for (const line of lines) {
    let stat = parsed.get(line);
    if (stat === undefined) stat = parseStat(line);
    parsedNow.set(line, stat);
    if (!stat || stat.state === "Z" || stat.state === "X") continue;
    all.push(stat);
    byPid.set(stat.pid, stat);
    addTo(children, stat.ppid, stat);
    addTo(groups, stat.pgrp, stat);
  }
  parsed = parsedNow;
  shared = { lines, snapshot: { all, byPid, children, groups } };
  return shared.snapshot;
}

function addTo(map: Map<number, ProcStat[]>, key: number, stat: ProcStat): void {
  const list = map.get(key);
  if (list) list.push(stat);
  else map.set(key, [stat]);
}

/** This boot's id: start times count from boot, so a pid recorded before a reboot is void. */
export function bootId(): string {
  return readKernelFile("/proc/sys/kernel/random/boot_id")?.trim() ?? "";
}

/** Sends `signal` to one pid or (negative) one group; false when nothing received it. */
export function sendSignal(target: number, signal: Deno.Signal): boolean {
  try {
    Deno.kill(target, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * The set of processes that belong to one attempt: its roots (the wrapper, a container's
 * main process), their process group, and every descendant seen by a `scan()`.
 */
export class ProcessTree {
  /** pid → start time of every process ever seen as part of the attempt. */
  readonly #known = new Map<number, number>();
  readonly #pgid: number | null;

  /** `pgid`: the attempt's own process group (its wrapper's pid), if it has one. */
  constructor(pgid: number | null) {
    this.#pgid = pgid;
  }

  /** Adds a root process (it and its descendants belong to the attempt). */
  addRoot(pid: number, startTime: number): void {
    this.#known.set(pid, startTime);
  }

  /**
   * Walks /proc once and adds the new descendants and group members of known processes;
   * returns the known processes running, sorted. Periodic scans may share a walk a moment
   * old; `fresh` (cancel, pids) sees the present. Known processes are read afresh (a shared
   * walk does not read again a process it read before: see `StatWalk`), and those that ended
   * are forgotten: a pid is never the same process again.
   */
  scan(fresh = false): number[] {
    const ended = new Set<number>();
    const alive = this.#prune(ended);
    // Looked up by pid and group, not by going through every process of the host: each
    // attempt scans every second.
    const { byPid, children, groups } = listProcesses(fresh);
    const queue: number[] = [];
    for (const [pid, startTime] of this.#known) {
      if (byPid.get(pid)?.startTime === startTime) queue.push(pid);
    }
    // The group is ours while a known process still runs in it (see groupIsOurs).
    const groupTrusted = this.#pgid !== null && alive.some((p) => p.pgrp === this.#pgid);
    for (const p of groupTrusted ? groups.get(this.#pgid!) ?? [] : []) {
      if (this.#known.get(p.pid) === p.startTime || ended.has(p.pid)) continue;
      this.#known.set(p.pid, p.startTime);
      queue.push(p.pid);
    }
    const found: number[] = [];
    while (queue.length > 0) {
      const pid = queue.pop()!;
      for (const child of children.get(pid) ?? []) {
        if (ended.has(child.pid) || this.#known.get(child.pid) === child.startTime) continue;
        this.#known.set(child.pid, child.startTime);
        queue.push(child.pid);
        found.push(child.pid);
      }
    }
    // Those found were running at the walk, a moment ago; the others were read just now.
    return [...alive.map((p) => p.pid), ...found].sort((a, b) => a - b);
  }

  /** Reads every known process, forgets (into `ended`) those that ended; the others' stats. */
  #prune(ended: Set<number>): ProcStat[] {
    const alive: ProcStat[] = [];
    for (const [pid, startTime] of this.#known) {
      const stat = readStat(pid);
      if (stat !== null && stat.startTime === startTime) alive.push(stat);
      else {
        this.#known.delete(pid);
        ended.add(pid);
      }
    }
    return alive;
  }

  /** Known processes still running (each checked against its start time). */
  alive(): number[] {
    const out: number[] = [];
    for (const [pid, startTime] of this.#known) {
      if (isSameProcess(pid, startTime)) out.push(pid);
    }
    return out.sort((a, b) => a - b);
  }

  /**
   * True while a known, running process is in the attempt's group. Only then can the group
   * id not have been reused, so only then may the whole group be signalled.
   */
  groupIsOurs(): boolean {
    if (this.#pgid === null) return false;
    for (const [pid, startTime] of this.#known) {
      const stat = readStat(pid);
      if (stat && stat.startTime === startTime && stat.pgrp === this.#pgid) return true;
    }
    return false;
  }

  /**
   * Signals the group (when it is still ours) and then each known running process outside
   * it, so that no process gets the signal twice (a second SIGTERM makes some launchers
   * skip their clean shutdown).
   */
  signalAll(signal: Deno.Signal): void {
    const group = this.#pgid !== null && this.groupIsOurs() ? this.#pgid : null;
    if (group !== null) sendSignal(-group, signal);
    for (const [pid, startTime] of this.#known) {
      const stat = readStat(pid);
      if (!stat || stat.startTime !== startTime) continue;
      if (group === null || stat.pgrp !== group) sendSignal(pid, signal);
    }
  }
}
