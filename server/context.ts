/**
 * The `Context` every service function is given — the store, the bus, the logger, the clock,
 * the id maker and the caps — and `createContext`, the one way to make one.
 */
import type { IngestStatus } from "./gateway/ingest_queue.ts";
import type { Database } from "./db/mod.ts";
import { Bus } from "./bus/bus.ts";
import { type Logger, silentLogger } from "./log.ts";
import { attachSeriesCache, type SeriesCache } from "./metrics/series_cache.ts";

/** What every service function needs: the store, the bus, and the injected clock and ids. */
export interface Context {
  db: Database;
  bus: Bus;
  log: Logger;
  now: () => Date;
  /** A new short id with the given prefix, e.g. `j-3kx9q2m7ta`. */
  newId: (prefix: string) => string;
  /** Where backups go. */
  backupDir: string;
  /**
   * Where agent WebSockets are handed over (absent in tests that run no gateway); `nodeId` is
   * the node the agent token is bound to (null: the shared first-contact token).
   */
  agents?: {
    attach(socket: WebSocket, nodeId: string | null): void;
    /** Why another agent connection is refused now (a cap is full), or null. */
    connectionRefusal?(nodeId: string | null): string | null;
    /** How far behind storing agents' data the server is. */
    ingestStatus?(): IngestStatus;
  };
  /** Recently read metric series in memory (absent: every query reads the store). */
  series?: SeriesCache;
  /** SSE tuning and caps (server.yaml); tests shorten these. */
  sse?: {
    keepAliveMs?: number;
    maxBufferedBytes?: number;
    maxStreams?: number;
    maxStreamsPerToken?: number;
  };
  /** Caps on open MCP waits (`wait_for_run`); tests lower these. */
  waits?: { maxWaits?: number; maxWaitsPerToken?: number };
}

/** What `createContext` needs; everything but the store and the backup folder has a default. */
export interface ContextOptions {
  db: Database;
  backupDir: string;
  /** @default silentLogger */
  log?: Logger;
  /** @default the wall clock */
  now?: () => Date;
  /** @default randomId */
  newId?: (prefix: string) => string;
  sse?: Context["sse"];
  waits?: Context["waits"];
  /** Keep recently read series in memory (off: every query reads the store). @default true */
  seriesCache?: boolean;
}

/**
 * The one way a context is made (server, tests, bench): a bus whose failing listeners are
 * logged, and the series cache fed from it.
 */
export function createContext(options: ContextOptions): Context {
  const log = options.log ?? silentLogger;
  const ctx: Context = {
    db: options.db,
    bus: new Bus((topic, err) => log.error("bus listener failed", { topic, error: String(err) })),
    log,
    now: options.now ?? (() => new Date()),
    newId: options.newId ?? randomId,
    backupDir: options.backupDir,
    sse: options.sse,
    waits: options.waits,
  };
  if (options.seriesCache ?? true) attachSeriesCache(ctx);
  return ctx;
}

const ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";

/** Random short ids: a prefix, a dash and 10 characters of Crockford-style base32. */
export function randomId(prefix: string): string {
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  let out = "";
  for (const b of bytes) out += ID_ALPHABET[b & 31];
  return `${prefix}-${out}`;
}
