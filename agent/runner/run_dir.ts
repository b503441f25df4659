// The files a runner keeps in an attempt's run dir. The job and its wrapper write the raw
// output and the exit status; the agent writes the rest. Together they let a restarted
// agent pick up where the previous one stopped.

/** File names inside `RunSpec.run_dir`. */
export const RUN_FILES = {
  /** The job's stdout, appended by the wrapper (never a pipe to the agent). */
  stdout: "stdout.raw",
  /** The job's stderr, appended by the wrapper. */
  stderr: "stderr.raw",
  /** The job's variables until the wrapper has opened them (it removes the file at once). */
  jobEnv: "job.env",
  /** Every delivered line, one JSON object `{seq, ts, stream, text}` per line. */
  outputLog: "output.log",
  /** How far the raw files were read: `{version, seq, log_bytes, offsets}`. */
  tail: "tail.json",
  /** The job's exit status as a shell reports it (128 + N for signal N), from the wrapper. */
  exitStatus: "exit_status",
  /** The wrapper's pid, process group and start time, written at start. */
  pid: "pid.json",
  /** The handle's state, as `RunHandle.state()` returns it. */
  handle: "handle.json",
  /** Present once the agent asked to cancel: the end is then CANCELLED. */
  cancel: "cancel_requested",
  /** The `ExitInfo` the agent computed when the attempt ended. */
  exit: "exit.json",
} as const;

/** Path of one run-dir file. */
export function runFile(runDir: string, name: keyof typeof RUN_FILES): string {
  return `${runDir}/${RUN_FILES[name]}`;
}

/** Writes JSON so that a reader never sees half a file (write aside, then rename). */
export async function writeJsonAtomic(path: string, value: unknown): Promise<void> {
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(value));
  await Deno.rename(tmp, path);
}

/** Reads a JSON file; null when it is missing or not JSON. */
export async function readJsonOrNull(path: string): Promise<unknown> {
  try {
    return JSON.parse(await Deno.readTextFile(path));
  } catch {
    return null;
  }
}

/** Whether a file exists. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Reads the wrapper's exit status; null when there is none (yet). */
export async function readExitStatus(runDir: string): Promise<number | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(runFile(runDir, "exitStatus"));
  } catch {
    return null;
  }
  const status = Number.parseInt(text.trim(), 10);
  return Number.isInteger(status) ? status : null;
}
