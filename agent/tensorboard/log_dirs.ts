// Where frameworks write TensorBoard files when a script passes no log dir, and how a file's
// folder becomes the prefix of its metric keys.
//
// Frameworks put each run instance in a folder of its own: Lightning `version_N`, PyTorch's
// `SummaryWriter` and Transformers `Dec02_01-18-45_<host>`, PyTorch's `add_hparams` a Unix
// timestamp, Keras tutorials `20241202-011845`. Such a folder names the attempt, not the metric,
// so it is left out of the key: two runs of one script then share every key (compare, sweeps
// and the primary metric depend on it). A folder that names a split (`train`, `validation`) or
// anything else the script chose stays, as TensorBoard shows it.

import { compareEventFiles, type EventFile, listEventFiles } from "./event_file.ts";

/**
 * Folders under a job's working dir (or one level further down, as `<output_dir>/runs` of the
 * Transformers `Trainer`) that frameworks write event files to by default: PyTorch's
 * `SummaryWriter` and Transformers `runs/`, Lightning `lightning_logs/`, Keras's `TensorBoard`
 * callback `logs/`, and `tb_logs/` (Lightning's `TensorBoardLogger` in its documentation).
 */
export const DEFAULT_LOG_ROOTS = ["runs", "lightning_logs", "logs", "tb_logs"] as const;

/** Subfolders of the working dir looked into for a log root (the first, by name). */
export const MAX_SUBFOLDERS = 256;

/** Folders that hold code, environments or caches, never a script's logs or checkpoints. */
export const NOT_OUTPUT: ReadonlySet<string> = new Set([
  "node_modules",
  "__pycache__",
  "site-packages",
  "venv",
  "env",
]);

const RUN_INSTANCE_PATTERNS = [
  // Lightning: version_0, version_12.
  /^version_\d+$/,
  // PyTorch SummaryWriter and Transformers: `%b%d_%H-%M-%S_<host>[<comment>]`.
  /^[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_./,
  // PyTorch add_hparams: str(time.time()), and other Unix timestamps (seconds or ms).
  /^\d{9,13}(\.\d+)?$/,
  // Dates with a time, as scripts name run folders: 20241202-011845, 2024-12-02_01-18-45,
  // 2024-12-02T01:18:45.
  /^\d{4}-?\d{2}-?\d{2}[T_-]\d{2}[:-]?\d{2}[:-]?\d{2}([._-].*)?$/,
];

/** True when a folder's name names a run instance (a version, a start time) rather than a series. */
export function isRunInstanceName(name: string): boolean {
  return RUN_INSTANCE_PATTERNS.some((pattern) => pattern.test(name));
}

/**
 * The key prefix of the event files in `dir` ("/"-separated, relative to the log root): the
 * folder without its run-instance levels. `version_0` → "", `fit/20241202-011845/train` →
 * `fit/train`, `Dec02_01-18-45_vm/1796173826.32` → "".
 */
export function metricPrefix(dir: string): string {
  if (dir === "") return "";
  return dir.split("/").filter((part) => !isRunInstanceName(part)).join("/");
}

/**
 * Every event file under `root` (a `tensorboard_dir` given with the job), oldest first, with
 * `dir` being the key prefix: the folder relative to `root` less its run-instance levels.
 */
export async function listKeyedEventFiles(
  root: string,
  folders?: string[],
): Promise<EventFile[]> {
  return (await listEventFiles(root, folders)).map((file) => ({
    ...file,
    dir: metricPrefix(file.dir),
  }));
}

/**
 * The default log roots under `workingDir` that exist, relative to it: each name of
 * `DEFAULT_LOG_ROOTS` in the folder itself and in its subfolders (not hidden, not an
 * environment or cache), a root inside another root left out.
 */
export async function findLogRoots(
  workingDir: string,
  ignore: readonly string[] = [],
): Promise<string[]> {
  const base = workingDir.length > 1 ? workingDir.replace(/\/+$/, "") : workingDir;
  const names = new Set<string>(DEFAULT_LOG_ROOTS);
  const top: string[] = [];
  const subfolders: string[] = [];
  try {
    for await (const entry of Deno.readDir(base)) {
      if (!entry.isDirectory) continue;
      if (names.has(entry.name)) top.push(entry.name);
      else if (!entry.name.startsWith(".") && !NOT_OUTPUT.has(entry.name)) {
        subfolders.push(entry.name);
      }
    }
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  subfolders.sort();
  const roots = top.sort();
  for (const sub of subfolders.slice(0, MAX_SUBFOLDERS)) {
    for (const name of DEFAULT_LOG_ROOTS) {
      try {
        const info = await Deno.lstat(`${base}/${sub}/${name}`);
        if (info.isDirectory) roots.push(`${sub}/${name}`);
      } catch {
        // Not there (or gone meanwhile): not a root.
      }
    }
  }
  return roots.filter((root) => !isIgnored(`${base}/${root}`, ignore));
}

/** `path` is one of `ignore`, or inside one. */
function isIgnored(path: string, ignore: readonly string[]): boolean {
  return ignore.some((dir) => {
    const d = dir.replace(/\/+$/, "");
    return path === d || path.startsWith(`${d}/`);
  });
}

/**
 * Every event file in the default log roots under `workingDir`, oldest first: `relPath` is
 * relative to `workingDir` (the file's identity), `dir` the key prefix, relative to its root
 * and less its run-instance levels (`lightning_logs/version_0/…` → "", `logs/train/…` →
 * `train`, `out/runs/Dec02_01-18-45_vm/1796173826.32/…` → ""). `folders`, when given, gets
 * the folders whose entries decided the answer, as `listEventFiles` gives them.
 */
export async function discoverEventFiles(
  workingDir: string,
  ignore: readonly string[] = [],
  folders?: string[],
): Promise<EventFile[]> {
  const base = workingDir.length > 1 ? workingDir.replace(/\/+$/, "") : workingDir;
  const files: EventFile[] = [];
  // The working dir's own entries name the roots in it; a root made in one of its subfolders
  // (`out/runs`) changes only that subfolder, which is not watched (see the tailer's relist).
  folders?.push(base);
  for (const root of await findLogRoots(base, ignore)) {
    for (const file of await listEventFiles(`${base}/${root}`, folders)) {
      files.push({ ...file, relPath: `${root}/${file.relPath}`, dir: metricPrefix(file.dir) });
    }
  }
  return files.sort(compareEventFiles);
}

/** Folders deep and entries visited when looking for event files outside the log roots. */
export const STRAY_SEARCH_LIMITS = { depth: 6, entries: 20_000 } as const;

/**
 * Folders (relative to `workingDir`, deepest listing first found) holding event files
 * modified at or after `sinceMs` outside the default log roots: where a script wrote its
 * event files without gpuctl following them. A bounded walk: `STRAY_SEARCH_LIMITS`.
 */
export async function strayEventFiles(
  workingDir: string,
  sinceMs: number,
  ignore: readonly string[] = [],
): Promise<string[]> {
  const base = workingDir.length > 1 ? workingDir.replace(/\/+$/, "") : workingDir;
  const roots = await findLogRoots(base, ignore);
  const inRoot = (rel: string) => roots.some((root) => rel === root || rel.startsWith(`${root}/`));
  const found = new Set<string>();
  let budget: number = STRAY_SEARCH_LIMITS.entries;
  const walk = async (path: string, rel: string, depth: number): Promise<void> => {
    if (depth > STRAY_SEARCH_LIMITS.depth || budget <= 0 || inRoot(rel)) return;
    const entries: Deno.DirEntry[] = [];
    try {
      for await (const entry of Deno.readDir(path)) {
        if (--budget <= 0) break;
        entries.push(entry);
      }
    } catch {
      return; // unreadable or gone: nothing to report from it
    }
    for (const entry of entries.sort((a, b) => a.name < b.name ? -1 : 1)) {
      const childRel = rel === "" ? entry.name : `${rel}/${entry.name}`;
      if (entry.isDirectory) {
        const child = `${path}/${entry.name}`;
        if (
          !entry.name.startsWith(".") && !NOT_OUTPUT.has(entry.name) && !isIgnored(child, ignore)
        ) {
          await walk(child, childRel, depth + 1);
        }
      } else if (entry.isFile && entry.name.startsWith("events.out.tfevents.")) {
        try {
          const info = await Deno.stat(`${path}/${entry.name}`);
          if ((info.mtime?.getTime() ?? 0) >= sinceMs) found.add(rel === "" ? "." : rel);
        } catch {
          // Gone meanwhile.
        }
      }
    }
  };
  await walk(base, "", 0);
  return [...found];
}

// Roots only TensorBoard writers make: a `logs/` folder often holds plain text logs.
const TENSORBOARD_ONLY_ROOTS = new Set(["runs", "lightning_logs", "tb_logs"]);

/**
 * Run-instance folders (`lightning_logs/version_3`, `runs/Dec02_01-18-45_host`) made or
 * changed at or after `sinceMs` in the default log roots under `workingDir` (only roots
 * TensorBoard writers alone make) that hold no event file: the newest of each root. A
 * framework's logger wrote something else there (Lightning's CSV without tensorboard).
 */
export async function writtenRootsWithoutEvents(
  workingDir: string,
  sinceMs: number,
  ignore: readonly string[] = [],
): Promise<string[]> {
  const base = workingDir.length > 1 ? workingDir.replace(/\/+$/, "") : workingDir;
  const out: string[] = [];
  for (const root of await findLogRoots(base, ignore)) {
    if (!TENSORBOARD_ONLY_ROOTS.has(root.split("/").at(-1)!)) continue;
    let newest: { name: string; ms: number } | null = null;
    try {
      for await (const entry of Deno.readDir(`${base}/${root}`)) {
        if (!entry.isDirectory || !isRunInstanceName(entry.name)) continue;
        const ms = (await Deno.stat(`${base}/${root}/${entry.name}`)).mtime?.getTime() ?? 0;
        if (ms >= sinceMs && (newest === null || ms > newest.ms)) newest = { name: entry.name, ms };
      }
    } catch {
      continue; // gone meanwhile: nothing to say about it
    }
    if (newest === null) continue;
    const folder = `${root}/${newest.name}`;
    if ((await listEventFiles(`${base}/${folder}`)).length === 0) out.push(folder);
  }
  return out;
}
