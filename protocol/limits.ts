/**
 * Limits of the API that both ends must know: the server enforces them and the console's
 * islands stay within them. Dependency-free, so islands can import it.
 */

/** The most runs one `GET /api/runs/metrics:stream` follows. */
export const MAX_STREAMED_RUNS = 100;
