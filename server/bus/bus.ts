/**
 * The in-memory pub/sub that fans events, metric points and log lines out to SSE
 * subscribers, rules and webhooks. In memory on purpose: the database is the source of
 * truth, and a subscriber that reconnects catches up from it.
 */

/** A receiver of messages of one topic. */
export type Listener<T = unknown> = (message: T) => void;

/** Topic names, so publishers and subscribers cannot drift apart. */
export const topics = {
  events: "events",
  metrics: (runId: string) => `metrics:${runId}`,
  logs: (runId: string) => `logs:${runId}`,
  /** Every run's points, `{run_id, points}` (rules). */
  allMetrics: "metrics",
  /** Every run's log lines, `{run_id, lines}` (rules). */
  allLogs: "logs",
  jobs: "jobs",
  /** A node came online or went offline, `{node_id, status}` (the scheduler). */
  nodes: "nodes",
} as const;

export class Bus {
  #listeners = new Map<string, Set<Listener>>();
  #onError: (topic: string, err: unknown) => void;

  constructor(onError: (topic: string, err: unknown) => void = () => {}) {
    this.#onError = onError;
  }

  /** Adds a listener; the returned function removes it (calling it twice is harmless). */
  subscribe<T>(topic: string, listener: Listener<T>): () => void {
    let set = this.#listeners.get(topic);
    if (!set) this.#listeners.set(topic, set = new Set());
    set.add(listener as Listener);
    return () => {
      const s = this.#listeners.get(topic);
      if (!s) return;
      s.delete(listener as Listener);
      if (s.size === 0) this.#listeners.delete(topic);
    };
  }

  /** Delivers synchronously; a listener that throws is reported and the others still run. */
  publish<T>(topic: string, message: T): void {
    const set = this.#listeners.get(topic);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(message);
      } catch (err) {
        this.#onError(topic, err);
      }
    }
  }

  /** How many listeners a topic has (all topics when none is named). */
  listenerCount(topic?: string): number {
    if (topic !== undefined) return this.#listeners.get(topic)?.size ?? 0;
    let n = 0;
    for (const s of this.#listeners.values()) n += s.size;
    return n;
  }
}
