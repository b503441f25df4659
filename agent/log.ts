/** The shared logger (see protocol/log.ts). */
export { createLogger, type Logger, memoryLogger, silentLogger } from "../protocol/log.ts";
