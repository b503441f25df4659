// Linux signal numbers and names, to read a wrapper's `128 + N` exit status as a signal.

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
const SIGRTMAX = 64;
/** Lowest real-time signal number glibc leaves to programs. */
const SIGRTMIN = 34;

/** The name of signal `n` (`9` → `"SIGKILL"`); real-time ones as `"SIGRTMIN+k"`. */
export function signalName(n: number): string {
  if (n > 0 && n < NAMES.length) return NAMES[n];
  if (n >= SIGRTMIN && n <= SIGRTMAX) {
    return n === SIGRTMIN ? "SIGRTMIN" : `SIGRTMIN+${n - SIGRTMIN}`;
  }
  return `SIG${n}`;
}

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
