/** The shared logger (see lib/log.ts). */
export { createLogger, type Logger, memoryLogger, silentLogger } from "../lib/log.ts";
