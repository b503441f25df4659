/**
 * A small structured logger, injected everywhere below the entry points (server/main.ts,
 * agent/main.ts, cli/main.ts), which are the only files that print.
 */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Formats `time LEVEL message key=value…` lines and hands them to `write` (stderr by default). */
export function createLogger(
  write: (line: string) => void = stderrLine,
  now: () => Date = () => new Date(),
): Logger {
  const emit = (level: string, message: string, fields?: Record<string, unknown>) => {
    const tail = fields
      ? Object.entries(fields)
        .map(([k, v]) => ` ${k}=${typeof v === "string" ? v : JSON.stringify(v)}`)
        .join("")
      : "";
    write(`${now().toISOString()} ${level} ${message}${tail}`);
  };
  return {
    info: (m, f) => emit("INFO", m, f),
    warn: (m, f) => emit("WARN", m, f),
    error: (m, f) => emit("ERROR", m, f),
  };
}

/** A logger that keeps its lines in memory, for tests. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(createLogger((line) => lines.push(line)), { lines });
}

/** A logger that drops everything. */
export const silentLogger: Logger = { info() {}, warn() {}, error() {} };

const encoder = new TextEncoder();
function stderrLine(line: string): void {
  Deno.stderr.writeSync(encoder.encode(line + "\n"));
}
