/**
 * What the agent does in folders a job can write: the run's folder (`GPUCTL_RUN_DIR`), the
 * folder of an evaluation's results file, the SDK's journal. With `job_user`, the agent runs
 * as root and the job as another user, who owns those folders and can swap any entry in them
 * for a symbolic link at any moment. A root process that created, chmodded, chowned, read or
 * wrote there by path would follow such a link: the job could make root chown a system
 * folder to it, or read a root-only file and have it published as metrics.
 *
 * So under `job_user` the agent never touches those paths itself: every such step runs as a
 * short process of the job user (`setpriv`, as the job itself starts), with a clean
 * environment, a time limit and bounded output. The kernel then checks each step with the job
 * user's rights, wherever a link leads: it reaches only what the job could reach anyway.
 * Without `job_user` the job and the agent are the same user and there is no boundary: the
 * agent uses the files directly.
 */
import type { JobUser } from "./runner/job_user.ts";
import { switchUserArgv } from "./runner/job_user.ts";

/** How long one step as the job user may take (a hung network mount, a FIFO nobody writes). */
export const JOB_FILE_TIMEOUT_MS = 10_000;

/** What a read found. */
export type JobFileRead =
  | { bytes: Uint8Array }
  | { missing: true }
  | { problem: string };

/** File steps in a job's folders, done with the job's rights. */
export interface JobFiles {
  /** The user the steps run as; null: the agent's own. */
  readonly user: JobUser | null;
  /**
   * Creates `path` and its missing parents; the last is mode 0700 when created. Throws an
   * error naming the path when it cannot.
   */
  makeDir(path: string): Promise<void>;
  /**
   * Reads at most `maxBytes` of the regular file `path` from byte `offset` on. A file that is
   * not a regular file (a FIFO, a device, a folder) is a problem, never read.
   */
  read(path: string, maxBytes: number, offset?: number): Promise<JobFileRead>;
  /** Replaces the contents of `path` with `text`. Throws an error naming the path. */
  write(path: string, text: string): Promise<void>;
}

/** Options of {@linkcode createJobFiles}. */
export interface JobFilesOptions {
  /** The `setpriv` that switches to the job user. @default "setpriv" on `path` */
  setpriv?: string;
  /** PATH for the steps run as the job user. @default the usual system folders */
  path?: string;
  /** @default JOB_FILE_TIMEOUT_MS */
  timeoutMs?: number;
}

const SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/**
 * `sh -c READ_SCRIPT sh PATH OFFSET COUNT`: exit 3 when nothing is there, 4 when it is not a
 * regular file, else COUNT bytes from OFFSET on stdout. `dd` opens the file once; a FIFO
 * swapped in after the test blocks it only until the time limit.
 */
const READ_SCRIPT = [
  '[ -e "$1" ] || exit 3',
  '[ -f "$1" ] || exit 4',
  'exec dd if="$1" bs=65536 iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none',
].join("\n");

/** File steps as `user` (the agent must be root), or as the agent itself when `user` is null. */
export function createJobFiles(user: JobUser | null, options: JobFilesOptions = {}): JobFiles {
  return user === null ? directFiles() : asUserFiles(user, options);
}

/** The agent's own steps: the job runs as the agent's user, so no link can lead it further. */
function directFiles(): JobFiles {
  return {
    user: null,
    async makeDir(path) {
      await Deno.mkdir(path, { recursive: true, mode: 0o700 });
    },
    async read(path, maxBytes, offset = 0) {
      let info: Deno.FileInfo;
      try {
        info = await Deno.stat(path);
      } catch (err) {
        if (err instanceof Deno.errors.NotFound) return { missing: true };
        return { problem: "cannot be read" };
      }
      if (!info.isFile) return { problem: "is not a regular file" };
      using file = await Deno.open(path);
      if (offset > 0) await file.seek(offset, Deno.SeekMode.Start);
      const buf = new Uint8Array(Math.min(maxBytes, Math.max(0, info.size - offset)));
      let read = 0;
      while (read < buf.length) {
        const n = await file.read(buf.subarray(read));
        if (n === null) break;
        read += n;
      }
      return { bytes: buf.subarray(0, read) };
    },
    async write(path, text) {
      await Deno.writeTextFile(path, text);
    },
  };
}

function asUserFiles(user: JobUser, options: JobFilesOptions): JobFiles {
  const path = options.path ?? SYSTEM_PATH;
  const timeoutMs = options.timeoutMs ?? JOB_FILE_TIMEOUT_MS;
  let setpriv: Promise<string> | null = null;
  const findSetpriv = () =>
    setpriv ??= options.setpriv !== undefined
      ? Promise.resolve(options.setpriv)
      : findProgram("setpriv", path).then((found) => found ?? "setpriv");

  /** Runs `argv` as the job user; the agent's environment (its token) never reaches it. */
  const run = async (argv: string[], stdin?: Uint8Array) => {
    const prefix = switchUserArgv(await findSetpriv(), user);
    const child = new Deno.Command(prefix[0], {
      args: [...prefix.slice(1), ...argv],
      clearEnv: true,
      env: { PATH: path, LC_ALL: "C" },
      cwd: "/",
      stdin: stdin ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(timeoutMs),
    }).spawn();
    if (stdin) {
      const writer = child.stdin.getWriter();
      await writer.write(stdin).catch(() => {});
      await writer.close().catch(() => {});
    }
    const out = await child.output();
    return { code: out.code, signal: out.signal, stdout: out.stdout, stderr: out.stderr };
  };
  const what = `as job_user "${user.name}"`;

  return {
    user,
    async makeDir(dir) {
      const out = await run(["mkdir", "-p", "-m", "0700", "--", dir]);
      if (out.code !== 0) {
        throw new Error(`Cannot create "${dir}" ${what}: ${failure(out)}`);
      }
    },
    async read(file, maxBytes, offset = 0) {
      const out = await run([
        "sh",
        "-c",
        READ_SCRIPT,
        "sh",
        file,
        String(offset),
        String(maxBytes),
      ]);
      if (out.code === 0) return { bytes: out.stdout };
      if (out.code === 3) return { missing: true };
      if (out.code === 4) return { problem: "is not a regular file" };
      // What the reader said is not repeated: it could quote the file.
      return {
        problem: out.signal
          ? `could not be read ${what} within ${timeoutMs} ms`
          : `cannot be read ${what}`,
      };
    },
    async write(file, text) {
      const out = await run(["sh", "-c", 'cat >"$1"', "sh", file], new TextEncoder().encode(text));
      if (out.code !== 0) throw new Error(`Cannot write "${file}" ${what}: ${failure(out)}`);
    },
  };
}

/** Why a step failed: its first error line (tools name the path, not the contents). */
function failure(out: { signal: string | null; stderr: Uint8Array }): string {
  if (out.signal) return `stopped by ${out.signal} (more than the time limit)`;
  const line = new TextDecoder().decode(out.stderr).split("\n")[0].trim();
  return line.slice(0, 300) || "it failed";
}

async function findProgram(name: string, path: string): Promise<string | null> {
  for (const dir of path.split(":")) {
    try {
      const info = await Deno.stat(`${dir}/${name}`);
      if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return `${dir}/${name}`;
    } catch {
      // not in this folder
    }
  }
  return null;
}
