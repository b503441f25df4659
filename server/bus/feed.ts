/**
 * A feed: what a live view of stored, growing data needs — the stored part after an id (to
 * resume without a gap), live messages off the bus, the newest id now (to start at "now"),
 * and, for data that stops growing, when it has ended. The REST face serves a feed as SSE;
 * the MCP face waits on one; services build them so both see the same items.
 */

/** One item of a feed; `id` orders items and is what a reader resumes after. */
export interface FeedMessage {
  id: number;
  data: unknown;
}

export interface Feed {
  /** Stored messages after `afterId`, oldest first, at most `limit`. */
  backlog(afterId: number, limit: number): FeedMessage[];
  /** Live messages; returns the unsubscribe function. */
  subscribe(push: (messages: FeedMessage[]) => void): () => void;
  /** The newest stored id now (0 when none): where a reader that names no id starts. */
  lastId(): number;
  /**
   * For feeds that end: the data of the end once nothing more will come (null while more
   * may), and a subscription that says when to ask again.
   */
  end?: {
    ended(): unknown | null;
    subscribe(recheck: () => void): () => void;
  };
}
