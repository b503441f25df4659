/**
 * Limits of the API that both ends must know: the server enforces them and the console's
 * islands stay within them. Dependency-free, so islands can import it.
 */

/** The most runs one `GET /api/runs/metrics:stream` follows. */
export const MAX_STREAMED_RUNS = 100;

/** Series (distinct runs × distinct keys) one `metrics:query` may ask for. */
export const MAX_QUERY_SERIES = 100;
/** Points (series × `max_points`) one `metrics:query` answer may hold. */
export const MAX_QUERY_POINTS = 1_000_000;
