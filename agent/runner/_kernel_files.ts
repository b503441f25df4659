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
 * new process comes with a new entry (a new inode), so an entry listed with the same name and
 * inode as at the last walk is the same process: its pid, parent at the time, group and start
 * time are what was read then. What a later read could change (a parent that died, a new
 * group, a zombie) matters only for the processes an attempt knows, which read their own
 * stat afresh (see `ProcessTree.scan`). A listing as a whole costs one `getdents` per few
 * hundred processes instead of an open, a read and a close for each one.
 */
export class StatWalk {
  #lines = new Map<string, { ino: bigint; line: string }>();

  /** The lines of `entries` (the listing of /proc); `fresh` reads every process again. */
  lines(
    entries: readonly DirEntryIno[],
    read: (name: string) => string | null,
    fresh = false,
  ): string[] {
    const next = new Map<string, { ino: bigint; line: string }>();
    const out: string[] = [];
    for (const { name, ino } of entries) {
      if (!isPid(name)) continue;
      const known = fresh ? undefined : this.#lines.get(name);
      const line = known !== undefined && known.ino === ino ? known.line : read(name);
      // null when the process ended while we looked
      if (line === null) continue;
      next.set(name, { ino, line });
      out.push(line);
    }
    this.#lines = next;
    return out;
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
  const read = (name: string) => readKernelFile(`/proc/${name}/stat`);
  const entries = libcListDirInodes("/proc");
  if (entries !== null) return walk.lines(entries, read, fresh);
  const lines: string[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    // null when the process ended while we looked
    const line = read(entry.name);
    if (line !== null) lines.push(line);
  }
  return lines;
}
