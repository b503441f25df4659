/**
 * Reads kernel files under /proc and /sys. Deno 2.9 refuses these paths to any program not
 * run with --allow-all ("Requires all access"), even with --allow-read. The agent runs with
 * a narrower list that includes --allow-ffi (for NVML), so when a direct read is refused the
 * files are read through libc's open/read and opendir/readdir, which cost microseconds; a
 * host without a loadable glibc falls back to `cat`, a process per read. The choice is made
 * once and remembered.
 */

type Method = "direct" | "libc" | "cat";

let method: Method | null = null;

function refused(err: unknown): boolean {
  return err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.PermissionDenied;
}

/** How kernel files are being read (tests and the bench say which path they measured). */
export function kernelFileMethod(): Method {
  if (method === null) {
    try {
      Deno.readTextFileSync("/proc/self/stat");
      method = "direct";
    } catch (err) {
      method = refused(err) && openLibc() !== null ? "libc" : refused(err) ? "cat" : "direct";
    }
  }
  return method;
}

const LIBC_SYMBOLS = {
  open: { parameters: ["buffer", "i32"], result: "i32" },
  read: { parameters: ["i32", "buffer", "usize"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
  opendir: { parameters: ["buffer"], result: "pointer" },
  readdir: { parameters: ["pointer"], result: "pointer" },
  closedir: { parameters: ["pointer"], result: "i32" },
  // glibc 2.30 and later: a whole folder's entries in a few calls (see libcProcEntries).
  getdents64: { parameters: ["i32", "buffer", "usize"], result: "isize", optional: true },
} as const;

type Libc = Deno.DynamicLibrary<typeof LIBC_SYMBOLS>["symbols"];

let libc: Libc | null | undefined;

function openLibc(): Libc | null {
  if (libc === undefined) {
    try {
      libc = Deno.dlopen("libc.so.6", LIBC_SYMBOLS).symbols;
    } catch {
      libc = null;
    }
  }
  return libc;
}

const O_RDONLY_CLOEXEC = 0o2000000;
// glibc's struct dirent on 64-bit Linux: d_ino (8), d_off (8), d_reclen (2), d_type (1),
// then d_name.
const DIRENT_NAME_OFFSET = 19;
const encoder = new TextEncoder();
const decoder = new TextDecoder();
let readBuffer = new Uint8Array(64 * 1024);

function cString(path: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(path + "\0");
}

/** A whole file through libc; null when it cannot be opened. */
export function libcReadFile(path: string): string | null {
  const c = openLibc();
  if (!c) return null;
  const fd = c.open(cString(path), O_RDONLY_CLOEXEC);
  if (fd < 0) return null;
  try {
    let length = 0;
    for (;;) {
      if (length === readBuffer.length) {
        const bigger = new Uint8Array(readBuffer.length * 2);
        bigger.set(readBuffer);
        readBuffer = bigger;
      }
      const n = Number(c.read(fd, readBuffer.subarray(length), BigInt(readBuffer.length - length)));
      if (n < 0) return null;
      if (n === 0) break;
      length += n;
    }
    return decoder.decode(readBuffer.subarray(0, length));
  } finally {
    c.close(fd);
  }
}

/** The entry names of a folder through libc (without `.` and `..`); null when it cannot. */
export function libcListDir(path: string): string[] | null {
  return libcListDirInodes(path)?.map((entry) => entry.name) ?? null;
}

/** A folder entry with its inode number. */
export interface DirEntryIno {
  name: string;
  ino: bigint;
}

/**
 * The entries of a folder through libc (without `.` and `..`), each with its inode number;
 * null when it cannot.
 */
export function libcListDirInodes(path: string): DirEntryIno[] | null {
  const c = openLibc();
  if (!c) return null;
  const dir = c.opendir(cString(path));
  if (dir === null) return null;
  const entries: DirEntryIno[] = [];
  try {
    for (;;) {
      const entry = c.readdir(dir);
      if (entry === null) break;
      const view = new Deno.UnsafePointerView(entry);
      const name = view.getCString(DIRENT_NAME_OFFSET);
      if (name !== "." && name !== "..") entries.push({ name, ino: view.getBigUint64(0) });
    }
  } finally {
    c.closedir(dir);
  }
  return entries;
}

/** The process entries of a listing of /proc: each one's pid and inode number, in order. */
export interface ProcEntries {
  pids: number[];
  inos: number[];
}

let direntBuffer = new Uint8Array(64 * 1024);
let direntView = new DataView(direntBuffer.buffer);

/**
 * The process entries of `/proc` through libc; null when it cannot. With `getdents64` the
 * whole listing is read into one buffer and parsed in place, a few calls for a few hundred
 * processes and no object per entry (a listing by `readdir` makes a call, a pointer and a
 * name string for each one, every walk).
 */
export function libcProcEntries(path = "/proc"): ProcEntries | null {
  const c = openLibc();
  if (!c) return null;
  if (!c.getdents64) return fromDirEntries(libcListDirInodes(path));
  const fd = c.open(cString(path), O_RDONLY_CLOEXEC);
  if (fd < 0) return null;
  const out: ProcEntries = { pids: [], inos: [] };
  try {
    for (;;) {
      const n = Number(c.getdents64(fd, direntBuffer, BigInt(direntBuffer.length)));
      if (n === 0) return out;
      if (n < 0) {
        // EINVAL: an entry larger than the buffer (never for /proc); any other error: none.
        if (direntBuffer.length >= 1024 * 1024) return null;
        direntBuffer = new Uint8Array(direntBuffer.length * 2);
        direntView = new DataView(direntBuffer.buffer);
        continue;
      }
      parseDirents(n, out);
    }
  } finally {
    c.close(fd);
  }
}

// linux_dirent64: d_ino (8), d_off (8), d_reclen (2), d_type (1), then d_name, NUL-ended.
function parseDirents(length: number, out: ProcEntries): void {
  for (let at = 0; at < length;) {
    const reclen = direntView.getUint16(at + 16, true);
    let pid = 0;
    let i = at + DIRENT_NAME_OFFSET;
    for (; direntBuffer[i] >= 48 && direntBuffer[i] <= 57; i++) {
      pid = pid * 10 + direntBuffer[i] - 48;
    }
    // Only names all digits: "self", "sys" and the like are no process.
    if (i > at + DIRENT_NAME_OFFSET && direntBuffer[i] === 0) {
      out.pids.push(pid);
      out.inos.push(direntView.getUint32(at, true) + direntView.getUint32(at + 4, true) * 2 ** 32);
    }
    at += reclen;
  }
}

function fromDirEntries(entries: DirEntryIno[] | null): ProcEntries | null {
  if (entries === null) return null;
  const out: ProcEntries = { pids: [], inos: [] };
  for (const { name, ino } of entries) {
    if (!isPid(name)) continue;
    out.pids.push(Number(name));
    out.inos.push(Number(ino));
  }
  return out;
}

function catSync(args: string[], shell = false): string | null {
  const out = shell
    ? new Deno.Command("sh", { args: ["-c", args[0]], stdout: "piped", stderr: "null" })
      .outputSync()
    : new Deno.Command("cat", { args, stdout: "piped", stderr: "null" }).outputSync();
  if (!out.success && out.stdout.length === 0) return null;
  return decoder.decode(out.stdout);
}

/** The text of one kernel file, or null when it does not exist (or cannot be read). */
export function readKernelFile(path: string): string | null {
  switch (kernelFileMethod()) {
    case "direct":
      try {
        return Deno.readTextFileSync(path);
      } catch {
        return null;
      }
    case "libc":
      return libcReadFile(path);
    case "cat":
      return catSync([path]);
  }
}

/**
 * The stat lines of /proc's processes, read again only for entries not seen before. A
 * process's `/proc/<pid>` entry keeps its inode while the process lives, and a pid taken by a
 * new process comes with a new entry (a new inode), so an entry listed with the same pid and
 * inode as at the last walk is the same process: its pid, parent at the time, group and start
 * time are what was read then. What a later read could change (a parent that died, a new
 * group, a zombie) matters only for the processes an attempt knows, which read their own
 * stat afresh (see `ProcessTree.scan`). A listing as a whole costs one `getdents` per few
 * hundred processes instead of an open, a read and a close for each one; a walk that finds
 * the same processes as the last hands back the same array (its callers then reuse what
 * they made of it).
 */
export class StatWalk {
  #known = new Map<number, { ino: number; line: string }>();
  #lines: string[] = [];

  /** The lines of the listed processes; `fresh` reads every one again. */
  lines(entries: ProcEntries, read: (pid: number) => string | null, fresh = false): string[] {
    const { pids, inos } = entries;
    if (!fresh && this.#same(entries)) return this.#lines;
    const next = new Map<number, { ino: number; line: string }>();
    const out: string[] = [];
    for (let i = 0; i < pids.length; i++) {
      const known = fresh ? undefined : this.#known.get(pids[i]);
      const line = known !== undefined && known.ino === inos[i] ? known.line : read(pids[i]);
      // null when the process ended while we looked
      if (line === null) continue;
      next.set(pids[i], { ino: inos[i], line });
      out.push(line);
    }
    this.#known = next;
    this.#lines = out;
    return out;
  }

  /** True when `entries` are the processes of the last walk, each with its inode then. */
  #same({ pids, inos }: ProcEntries): boolean {
    if (pids.length !== this.#known.size) return false;
    for (let i = 0; i < pids.length; i++) {
      if (this.#known.get(pids[i])?.ino !== inos[i]) return false;
    }
    return true;
  }
}

function isPid(name: string): boolean {
  if (name.length === 0) return false;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/**
 * How long one walk of /proc serves every caller: each running attempt scans for its
 * descendants, and one shared walk keeps the agent's cost flat as attempts add up.
 */
export const STATS_TTL_MS = 900;

let cached: { at: number; lines: string[] } | null = null;
const walk = new StatWalk();

/**
 * The `/proc/<pid>/stat` lines of every process, at most `maxAgeMs` old. A walk older than
 * that lists /proc again, but reads only the processes it had not read before (see
 * {@linkcode StatWalk}); `maxAgeMs` 0 reads every one.
 */
export function readAllStats(maxAgeMs = STATS_TTL_MS): string[] {
  const now = performance.now();
  if (cached && now - cached.at < maxAgeMs) return cached.lines;
  cached = { at: now, lines: walkStats(maxAgeMs === 0) };
  return cached.lines;
}

function walkStats(fresh: boolean): string[] {
  const how = kernelFileMethod();
  if (how === "cat") {
    const text = catSync(["cat /proc/[0-9]*/stat 2>/dev/null"], true) ?? "";
    return text.split("\n").filter((l) => l !== "").map((l) => l + "\n");
  }
  const read = (pid: number) => readKernelFile(`/proc/${pid}/stat`);
  const entries = libcProcEntries();
  if (entries !== null) return walk.lines(entries, read, fresh);
  const lines: string[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!isPid(entry.name)) continue;
    // null when the process ended while we looked
    const line = read(Number(entry.name));
    if (line !== null) lines.push(line);
  }
  return lines;
}
