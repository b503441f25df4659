/**
 * Linux signal numbers and names, in one place for the agent (a wrapper's `128 + N` exit
 * status read as a signal) and the server (a failure's signal named for a person).
 *
 * @module
 */

const NAMES: readonly string[] = [
  "",
  "SIGHUP",
  "SIGINT",
  "SIGQUIT",
  "SIGILL",
  "SIGTRAP",
  "SIGABRT",
  "SIGBUS",
  "SIGFPE",
  "SIGKILL",
  "SIGUSR1",
  "SIGSEGV",
  "SIGUSR2",
  "SIGPIPE",
  "SIGALRM",
  "SIGTERM",
  "SIGSTKFLT",
  "SIGCHLD",
  "SIGCONT",
  "SIGSTOP",
  "SIGTSTP",
  "SIGTTIN",
  "SIGTTOU",
  "SIGURG",
  "SIGXCPU",
  "SIGXFSZ",
  "SIGVTALRM",
  "SIGPROF",
  "SIGWINCH",
  "SIGIO",
  "SIGPWR",
  "SIGSYS",
];

/** Highest real-time signal number on Linux. */
export const SIGRTMAX = 64;
/** Lowest real-time signal number glibc leaves to programs. */
const SIGRTMIN = 34;

/** The name of one of the 31 standard signals (`9` → `"SIGKILL"`), else null. */
export function standardSignalName(n: number): string | null {
  return Number.isInteger(n) && n > 0 && n < NAMES.length ? NAMES[n] : null;
}

/** The name of signal `n` (`9` → `"SIGKILL"`); real-time ones as `"SIGRTMIN+k"`. */
export function signalName(n: number): string {
  const standard = standardSignalName(n);
  if (standard !== null) return standard;
  if (n >= SIGRTMIN && n <= SIGRTMAX) {
    return n === SIGRTMIN ? "SIGRTMIN" : `SIGRTMIN+${n - SIGRTMIN}`;
  }
  return `SIG${n}`;
}
