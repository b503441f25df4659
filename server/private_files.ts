/**
 * Files under GPUCTL_HOME hold tokens and training data: folders are 0700, files 0600.
 * Modes are set with chmod after creation, so a loose umask cannot widen them.
 */

/** The mode of gpuctl's folders. */
export const PRIVATE_DIR_MODE = 0o700;
/** The mode of gpuctl's files. */
export const PRIVATE_FILE_MODE = 0o600;

// Windows has no POSIX modes; Deno.chmod throws there.
const POSIX = Deno.build.os !== "windows";

/**
 * Creates `path` (and its parents) when missing and makes it 0700. Returns the earlier mode
 * when an existing folder was looser, so the caller can say that it was tightened.
 */
export function makePrivateDir(path: string): number | null {
  let before: number | null = null;
  try {
    before = Deno.statSync(path).mode;
  } catch (err) {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  }
  Deno.mkdirSync(path, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (!POSIX) return null;
  Deno.chmodSync(path, PRIVATE_DIR_MODE);
  return before !== null && (before & 0o077) !== 0 ? before & 0o777 : null;
}

/**
 * Makes an existing file 0600 (a missing one is left missing). Returns the earlier mode when
 * it was looser.
 */
export function makePrivateFile(path: string): number | null {
  if (!POSIX) return null;
  let before: number;
  try {
    before = Deno.statSync(path).mode!;
    Deno.chmodSync(path, PRIVATE_FILE_MODE);
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
  return (before & 0o077) !== 0 ? before & 0o777 : null;
}

/** Writes `text` to `path` as a private file, atomically: readers see the old or the new. */
export async function writePrivateFile(path: string, text: string): Promise<void> {
  const tmp = `${path}.tmp-${Deno.pid}`;
  try {
    await Deno.writeTextFile(tmp, text, { mode: PRIVATE_FILE_MODE });
    makePrivateFile(tmp);
    await Deno.rename(tmp, path);
  } catch (err) {
    await Deno.remove(tmp).catch(() => {});
    throw err;
  }
}

/** "0755" for a mode, as `ls` and `chmod` spell it. */
export function octal(mode: number): string {
  return (mode & 0o777).toString(8).padStart(4, "0");
}
