/**
 * Reads kernel files under /proc and /sys. Deno 2.9 refuses these paths to any program not
 * run with --allow-all ("Requires all access"), even with --allow-read. The agent runs with
 * a narrower list that includes --allow-run, so when a direct read is refused, the read goes
 * through `cat` instead; the choice is made once and remembered.
 */

let viaSubprocess: boolean | null = null;

function refused(err: unknown): boolean {
  return err instanceof Deno.errors.NotCapable || err instanceof Deno.errors.PermissionDenied;
}

function catSync(args: string[], shell = false): string | null {
  const out = shell
    ? new Deno.Command("sh", { args: ["-c", args[0]], stdout: "piped", stderr: "null" })
      .outputSync()
    : new Deno.Command("cat", { args, stdout: "piped", stderr: "null" }).outputSync();
  if (!out.success && out.stdout.length === 0) return null;
  return new TextDecoder().decode(out.stdout);
}

/** The text of one kernel file, or null when it does not exist (or cannot be read). */
export function readKernelFile(path: string): string | null {
  if (viaSubprocess !== true) {
    try {
      const text = Deno.readTextFileSync(path);
      viaSubprocess = false;
      return text;
    } catch (err) {
      if (!refused(err)) return null;
      viaSubprocess = true;
    }
  }
  return catSync([path]);
}

/**
 * How long one walk of /proc serves every caller: each running attempt scans for its
 * descendants, and one shared walk keeps the agent's cost flat as attempts add up.
 */
export const STATS_TTL_MS = 900;

let cached: { at: number; lines: string[] } | null = null;

/** The `/proc/<pid>/stat` lines of every process, at most `maxAgeMs` old. */
export function readAllStats(maxAgeMs = STATS_TTL_MS): string[] {
  const now = performance.now();
  if (cached && now - cached.at < maxAgeMs) return cached.lines;
  cached = { at: now, lines: walkStats() };
  return cached.lines;
}

function walkStats(): string[] {
  if (viaSubprocess !== true) {
    try {
      const lines: string[] = [];
      for (const entry of Deno.readDirSync("/proc")) {
        if (!/^\d+$/.test(entry.name)) continue;
        try {
          lines.push(Deno.readTextFileSync(`/proc/${entry.name}/stat`));
        } catch {
          // the process ended while we looked
        }
      }
      viaSubprocess = false;
      return lines;
    } catch (err) {
      if (!refused(err)) return [];
      viaSubprocess = true;
    }
  }
  const text = catSync(["cat /proc/[0-9]*/stat 2>/dev/null"], true) ?? "";
  return text.split("\n").filter((l) => l !== "").map((l) => l + "\n");
}
