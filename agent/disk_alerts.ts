/** When a disk counts as low, and raising one DISK_LOW event per path and level until it recovers. */
import type { DiskUsage } from "./host_stats.ts";

const GIB = 1024 ** 3;
/** Warning below this much free space… */
export const DISK_WARNING_BYTES = 10 * GIB;
/** …or below this share of the file system. */
export const DISK_WARNING_FRACTION = 0.05;
/** Critical below this much free space… */
export const DISK_CRITICAL_BYTES = 2 * GIB;
/** …or below this share of the file system. */
export const DISK_CRITICAL_FRACTION = 0.01;

export type DiskLevel = "ok" | "warning" | "critical";
const RANK: Record<DiskLevel, number> = { ok: 0, warning: 1, critical: 2 };

/** How low a disk is: critical below 2 GiB or 1 %, warning below 10 GiB or 5 %. */
export function diskLevel(usage: DiskUsage): DiskLevel {
  const fraction = usage.totalBytes > 0 ? usage.freeBytes / usage.totalBytes : 1;
  if (usage.freeBytes < DISK_CRITICAL_BYTES || fraction < DISK_CRITICAL_FRACTION) return "critical";
  if (usage.freeBytes < DISK_WARNING_BYTES || fraction < DISK_WARNING_FRACTION) return "warning";
  return "ok";
}

/** One path's reading. */
export interface DiskReading {
  path: string;
  usage: DiskUsage;
}

/** A DISK_LOW event to raise. */
export interface DiskAlert {
  path: string;
  level: "warning" | "critical";
  usage: DiskUsage;
}

/**
 * Compares readings with the levels already raised (path → level) and returns the alerts to
 * raise now and the new raised levels: a path alerts when its level rises above what was
 * raised for it, and is forgotten once it is ok again (so a later fall alerts anew). Paths
 * not read this time keep their state.
 */
export function nextDiskAlerts(
  raised: ReadonlyMap<string, DiskLevel>,
  readings: readonly DiskReading[],
): { alerts: DiskAlert[]; raised: Map<string, DiskLevel> } {
  const next = new Map(raised);
  const alerts: DiskAlert[] = [];
  for (const { path, usage } of readings) {
    const level = diskLevel(usage);
    if (level === "ok") {
      next.delete(path);
      continue;
    }
    const before = next.get(path) ?? "ok";
    if (RANK[level] > RANK[before]) {
      alerts.push({ path, level, usage });
      next.set(path, level);
    }
  }
  return { alerts, raised: next };
}
