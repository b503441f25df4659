// A wrapper's `128 + N` exit status read as a signal (names from lib/signals.ts).
import { signalName, SIGRTMAX } from "../../lib/signals.ts";

export { signalName };

/**
 * Splits a shell-style exit status into code and signal. A shell reports a child killed by
 * signal N as status 128 + N, so 129…192 are read as signals: a program that itself calls
 * `exit(137)` cannot be told apart from one killed by SIGKILL, as in every shell.
 */
export function decodeExitStatus(
  status: number,
): { exit_code: number | null; signal: string | null } {
  if (status > 128 && status <= 128 + SIGRTMAX) {
    return { exit_code: null, signal: signalName(status - 128) };
  }
  return { exit_code: status, signal: null };
}
