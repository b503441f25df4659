// Which file systems are on this host's own disks (or in its memory), from the mount table.
// A call on a file open there returns in microseconds, so the agent may make it in place;
// on a network file system (NFS, Lustre, a FUSE mount) a call can hang for as long as the
// server is away, so it is made on another thread, where it blocks only itself.

import { readKernelFile } from "./runner/_kernel_files.ts";

/** File system types that live on the host's own block devices or in memory. */
export const LOCAL_FS_TYPES: ReadonlySet<string> = new Set([
  "ext2",
  "ext3",
  "ext4",
  "xfs",
  "btrfs",
  "f2fs",
  "bcachefs",
  "jfs",
  "reiserfs",
  "zfs",
  "tmpfs",
  "ramfs",
]);

/** `major:minor` of a `st_dev` number, as /proc/self/mountinfo writes it (glibc's encoding). */
export function deviceName(dev: number): string {
  const d = BigInt(dev);
  const major = ((d >> 8n) & 0xfffn) | ((d >> 32n) & ~0xfffn);
  const minor = (d & 0xffn) | ((d >> 12n) & ~0xffn);
  return `${major}:${minor}`;
}

/** The file system type of each `major:minor` in a mountinfo text (the last mount wins). */
export function mountTypes(mountinfo: string): Map<string, string> {
  const types = new Map<string, string>();
  for (const line of mountinfo.split("\n")) {
    const fields = line.split(" ");
    const dash = fields.indexOf("-", 6);
    if (dash < 0 || fields.length <= dash + 1) continue;
    types.set(fields[2], fields[dash + 1]);
  }
  return types;
}

let types: Map<string, string> | null = null;
/** Devices still missing after the table was read again for them. */
const unknown = new Set<string>();

/**
 * True when `dev` (a file's `st_dev`) is a mount of a local file system type. A device not
 * in the mount table as last read (a mount made since) has the table read again, once.
 */
export function isLocalDevice(dev: number): boolean {
  const name = deviceName(dev);
  if (types === null || (!types.has(name) && !unknown.has(name))) {
    types = mountTypes(readKernelFile("/proc/self/mountinfo") ?? "");
    if (!types.has(name)) unknown.add(name);
  }
  const type = types.get(name);
  return type !== undefined && LOCAL_FS_TYPES.has(type);
}
