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
      try {
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
      } catch (err) {
        // Removed since the stat (the job may still be tidying up): as if never written.
        if (err instanceof Deno.errors.NotFound) return { missing: true };
        return { problem: "cannot be read" };
      }
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
  const run = async (argv: string[], maxStdout: number, stdin?: Uint8Array) => {
    const prefix = switchUserArgv(await findSetpriv(), user);
    return await runStep(prefix[0], [...prefix.slice(1), ...argv], {
      path,
      timeoutMs,
      maxStdout,
      stdin,
    });
  };
  const what = `as job_user "${user.name}"`;

  return {
    user,
    async makeDir(dir) {
      const out = await run(["mkdir", "-p", "-m", "0700", "--", dir], 0);
      if (out.code !== 0 || out.stopped) {
        throw new Error(`Cannot create "${dir}" ${what}: ${failure(out)}`);
      }
    },
    async read(file, maxBytes, offset = 0) {
      const args = [file, String(offset), String(maxBytes)];
      const out = await run(["sh", "-c", READ_SCRIPT, "sh", ...args], maxBytes);
      if (out.code === 0 && out.stopped === null) return { bytes: out.stdout };
      if (out.stopped) return { problem: `could not be read ${what}: it ${out.stopped}` };
      if (out.code === 3) return { missing: true };
      if (out.code === 4) return { problem: "is not a regular file" };
      // What the reader said is not repeated: it could quote the file.
      return { problem: `cannot be read ${what}` };
    },
    async write(file, text) {
      const out = await run(
        ["sh", "-c", 'exec cat >"$1"', "sh", file],
        0,
        new TextEncoder().encode(text),
      );
      if (out.code !== 0 || out.stopped) {
        throw new Error(`Cannot write "${file}" ${what}: ${failure(out)}`);
      }
    },
  };
}

/** How a step as the job user ended. */
interface StepResult {
  code: number;
  stdout: Uint8Array;
  stderr: Uint8Array;
  /** Why the agent killed it (it ran too long, or wrote more than asked); null: it ended. */
  stopped: string | null;
}

/** Most of a step's stderr kept: its first line says what went wrong. */
const MAX_STDERR = 4096;

/**
 * Runs one step and collects its output, bounded in time and size whatever the process does
 * (it runs as the job user, whose processes may stop it, trace it or keep its pipes open):
 * SIGKILL at the time limit or past `maxStdout`, and the pipes are let go a second later.
 */
async function runStep(
  program: string,
  args: string[],
  options: { path: string; timeoutMs: number; maxStdout: number; stdin?: Uint8Array },
): Promise<StepResult> {
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(program, {
      args,
      clearEnv: true,
      env: { PATH: options.path, LC_ALL: "C" },
      cwd: "/",
      stdin: options.stdin ? "piped" : "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  } catch (err) {
    const stderr = new TextEncoder().encode(`cannot start ${program}: ${(err as Error).message}`);
    return { code: 127, stdout: new Uint8Array(), stderr, stopped: null };
  }
  let stopped: string | null = null;
  const readers = [child.stdout.getReader(), child.stderr.getReader()];
  let letGo: ReturnType<typeof setTimeout> | undefined;
  const stop = (why: string) => {
    if (stopped !== null) return;
    stopped = why;
    try {
      child.kill("SIGKILL");
    } catch {
      // already ended
    }
    letGo = setTimeout(() => readers.forEach((r) => r.cancel().catch(() => {})), 1000);
  };
  const timer = setTimeout(() => stop(`took more than ${options.timeoutMs} ms`), options.timeoutMs);
  try {
    if (options.stdin) {
      const writer = child.stdin.getWriter();
      await writer.write(options.stdin).catch(() => {});
      await writer.close().catch(() => {});
    }
    const [stdout, stderr, status] = await Promise.all([
      collect(readers[0], options.maxStdout, () => stop("wrote more than was asked")),
      collect(readers[1], MAX_STDERR, () => {}),
      child.status,
    ]);
    return { code: status.code, stdout, stderr, stopped };
  } finally {
    clearTimeout(timer);
    clearTimeout(letGo);
  }
}

/** Reads a pipe to its end, keeping at most `max` bytes; `over` is called once past it. */
async function collect(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  max: number,
  over: () => void,
): Promise<Uint8Array> {
  const kept = new Uint8Array(max);
  let length = 0;
  let overflowed = false;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch {
      break; // let go
    }
    if (chunk.done) break;
    const room = max - length;
    kept.set(chunk.value.subarray(0, room), length);
    length += Math.min(room, chunk.value.length);
    if (chunk.value.length > room && !overflowed) {
      overflowed = true;
      over();
    }
  }
  return kept.subarray(0, length);
}

/** Why a step failed: its first error line (tools name the path, not the contents). */
function failure(out: StepResult): string {
  if (out.stopped) return `stopped: it ${out.stopped}`;
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
