/** A small structured logger; the only place below the entry points that writes to stderr. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Writes `level message key=value…` lines to stderr. */
export function createLogger(write: (line: string) => void = stderrLine): Logger {
  const emit = (level: string, message: string, fields?: Record<string, unknown>) => {
    const tail = fields
      ? Object.entries(fields).map(([k, v]) =>
        ` ${k}=${typeof v === "string" ? v : JSON.stringify(v)}`
      )
        .join("")
      : "";
    write(`${new Date().toISOString()} ${level} ${message}${tail}`);
  };
  return {
    info: (m, f) => emit("INFO", m, f),
    warn: (m, f) => emit("WARN", m, f),
    error: (m, f) => emit("ERROR", m, f),
  };
}

/** A logger that keeps lines in memory, for tests. */
export function memoryLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return Object.assign(createLogger((l) => lines.push(l)), { lines });
}

const encoder = new TextEncoder();
function stderrLine(line: string): void {
  Deno.stderr.writeSync(encoder.encode(line + "\n"));
}
