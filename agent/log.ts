/** A small structured logger, injected everywhere below `agent/main.ts` (the only file that prints). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Formats `time LEVEL message key=value…` lines and hands them to `write`. */
export function createLogger(
  write: (line: string) => void,
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
