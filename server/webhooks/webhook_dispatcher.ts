/**
 * `WebhookDispatcher`: sends the bus's events to each hook from its own bounded queue, retrying
 * with backoff, so a slow receiver never holds up ingest; errors are logged with URLs redacted.
 */
import type { EventRecord } from "../../protocol/objects.ts";
import { type Bus, topics } from "../bus/bus.ts";
import type { Logger } from "../log.ts";
import { formatWebhook } from "./format_webhook.ts";
import { shouldDeliver } from "./should_deliver.ts";
import type { ResolvedWebhook } from "./webhook_config.ts";

/** Milliseconds one request may take before it is aborted. */
export const DEFAULT_TIMEOUT_MS = 5000;
/** Retries after the first attempt, on network errors, timeouts, 429 and 5xx. */
export const DEFAULT_RETRIES = 3;
/** Waits before the 1st, 2nd and 3rd retry; the last one repeats for further retries. */
export const DEFAULT_BACKOFF_MS: readonly number[] = Object.freeze([1000, 4000, 16000]);
/** Events waiting per hook; past it the oldest is dropped. */
export const DEFAULT_MAX_QUEUE = 1000;
/** A receiver's `Retry-After` is honoured up to this long, so one hook cannot park forever. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** The dispatcher's settings; all but `hooks`, `bus` and `log` optional. */
export interface WebhookDispatcherOptions {
  hooks: readonly ResolvedWebhook[];
  bus: Bus;
  log: Logger;
  /** @default globalThis.fetch */
  fetch?: typeof globalThis.fetch;
  /** @default 5000 (`DEFAULT_TIMEOUT_MS`) */
  timeoutMs?: number;
  /** @default 3 (`DEFAULT_RETRIES`) */
  retries?: number;
  /** @default [1000, 4000, 16000] (`DEFAULT_BACKOFF_MS`) */
  backoffMs?: readonly number[];
  /** The console's base URL, for links to a run's page. @default no links */
  consoleUrl?: string;
  /** Per hook. @default 1000 (`DEFAULT_MAX_QUEUE`) */
  maxQueue?: number;
  /** The clock signatures are dated by. @default the current time */
  now?: () => Date;
}

/** What happened to events since the last `runOnce()`. */
export interface DeliveryCounts {
  /** Answered with a 2xx. */
  delivered: number;
  /** Given up: a 4xx, or every retry spent. */
  failed: number;
  /** Never sent: pushed out of a full queue, or pending when the dispatcher stopped. */
  dropped: number;
}

interface HookState {
  hook: ResolvedWebhook;
  /** The hook's index in `server.yaml`, and its host: all that logs may say about it. */
  index: number;
  host: string;
  queue: EventRecord[];
  /** The loop draining `queue`, while one runs; one per hook keeps the hook's order. */
  worker: Promise<void> | null;
  droppedInBurst: number;
}

type Attempt =
  | { ok: true }
  | { ok: false; retry: boolean; reason: string; retryAfterMs?: number };

/**
 * Sends the bus's events to webhooks. The bus listener only enqueues: a slow or dead receiver
 * never holds up ingestion or the API. Each hook has a bounded queue drained in order by its
 * own loop; failures are logged with the hook's host only and never raised.
 */
export class WebhookDispatcher {
  #states: HookState[];
  #bus: Bus;
  #log: Logger;
  #fetch: typeof globalThis.fetch;
  #timeoutMs: number;
  #retries: number;
  #backoffMs: readonly number[];
  #consoleUrl: string | undefined;
  #maxQueue: number;
  #now: () => Date;
  #abort = new AbortController();
  #unsubscribe: (() => void) | null = null;
  #stopped = false;
  #counts: DeliveryCounts = { delivered: 0, failed: 0, dropped: 0 };

  constructor(opts: WebhookDispatcherOptions) {
    this.#timeoutMs = positive("timeoutMs", opts.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    this.#retries = count("retries", opts.retries ?? DEFAULT_RETRIES, 0);
    this.#maxQueue = count("maxQueue", opts.maxQueue ?? DEFAULT_MAX_QUEUE, 1);
    this.#backoffMs = [...(opts.backoffMs ?? DEFAULT_BACKOFF_MS)];
    this.#backoffMs.forEach((ms, i) => count(`backoffMs[${i}]`, ms, 0));
    this.#bus = opts.bus;
    this.#log = opts.log;
    this.#fetch = opts.fetch ?? globalThis.fetch;
    this.#consoleUrl = opts.consoleUrl;
    this.#now = opts.now ?? (() => new Date());
    this.#states = opts.hooks.map((hook, index) => ({
      hook,
      index,
      host: hostOf(hook.url),
      queue: [],
      worker: null,
      droppedInBurst: 0,
    }));
  }

  /** Subscribes to the bus's events; calling it again while running does nothing. */
  start(): void {
    if (this.#stopped) {
      throw new Error("Cannot start the webhook dispatcher: it was stopped; create a new one");
    }
    if (this.#unsubscribe || this.#states.length === 0) return;
    this.#unsubscribe = this.#bus.subscribe<EventRecord>(topics.events, this.#onEvent);
  }

  /**
   * Unsubscribes, aborts the requests in flight and drops what is queued; resolves when every
   * hook's loop has ended. Calling it again is harmless.
   */
  async stop(): Promise<void> {
    if (!this.#stopped) {
      this.#stopped = true;
      this.#unsubscribe?.();
      this.#unsubscribe = null;
      this.#abort.abort(new DOMException("The webhook dispatcher stopped", "AbortError"));
      for (const state of this.#states) {
        this.#counts.dropped += state.queue.length;
        state.queue.length = 0;
      }
    }
    await this.#idle();
  }

  /**
   * Waits until every queued event is delivered, given up or dropped; returns the counts
   * since the last call.
   */
  async runOnce(): Promise<DeliveryCounts> {
    await this.#idle();
    const counts = this.#counts;
    this.#counts = { delivered: 0, failed: 0, dropped: 0 };
    return counts;
  }

  /** The same as `runOnce()`: settles everything queued and returns the counts. */
  flush(): Promise<DeliveryCounts> {
    return this.runOnce();
  }

  async #idle(): Promise<void> {
    for (;;) {
      const running = this.#states.flatMap((s) => s.worker ? [s.worker] : []);
      if (running.length === 0) return;
      await Promise.all(running);
    }
  }

  // Runs inside `bus.publish`: it must only enqueue, and must never throw.
  #onEvent = (event: EventRecord): void => {
    try {
      for (const state of this.#states) {
        if (shouldDeliver(state.hook, event)) this.#enqueue(state, event);
      }
    } catch (err) {
      this.#log.error("Cannot queue an event for webhooks", { error: describeError(err) });
    }
  };

  #enqueue(state: HookState, event: EventRecord): void {
    if (this.#stopped) return;
    state.queue.push(event);
    if (state.queue.length > this.#maxQueue) {
      state.queue.shift();
      this.#counts.dropped++;
      if (state.droppedInBurst++ === 0) {
        this.#log.warn("Webhook queue full: dropping the oldest events until it drains", {
          hook: state.index,
          host: state.host,
          max_queue: this.#maxQueue,
        });
      }
    }
    // Started on a microtask, so not even the first request is built inside `publish`.
    state.worker ??= Promise.resolve().then(() => this.#drain(state));
  }

  async #drain(state: HookState): Promise<void> {
    for (;;) {
      const event = state.queue.shift();
      if (!event) break;
      try {
        await this.#deliver(state, event);
      } catch (err) {
        this.#counts.failed++;
        this.#log.error("Webhook delivery crashed", {
          hook: state.index,
          host: state.host,
          error: describeError(err),
        });
      }
    }
    // Checked empty and cleared in one synchronous step, so an event queued meanwhile
    // always finds either this loop still running or no loop at all.
    state.worker = null;
    if (state.droppedInBurst > 0) {
      this.#log.warn("Webhook queue drained", {
        hook: state.index,
        host: state.host,
        dropped: state.droppedInBurst,
      });
      state.droppedInBurst = 0;
    }
  }

  async #deliver(state: HookState, event: EventRecord): Promise<void> {
    const attempts = this.#retries + 1;
    let last: Attempt = { ok: false, retry: false, reason: "not attempted" };
    let n = 0;
    while (n < attempts && !this.#stopped) {
      n++;
      last = await this.#attempt(state.hook, event);
      if (last.ok) {
        this.#counts.delivered++;
        return;
      }
      if (!last.retry || n === attempts) break;
      const backoff = this.#backoffMs[Math.min(n - 1, this.#backoffMs.length - 1)] ?? 0;
      await this.#sleep(Math.max(backoff, last.retryAfterMs ?? 0));
    }
    if (this.#stopped) {
      this.#counts.dropped++;
      return;
    }
    this.#counts.failed++;
    this.#log.warn("Webhook delivery failed", {
      hook: state.index,
      kind: state.hook.kind,
      host: state.host,
      event_id: event.id,
      event_type: event.type,
      attempts: n,
      reason: last.ok ? "" : last.reason,
    });
  }

  async #attempt(hook: ResolvedWebhook, event: EventRecord): Promise<Attempt> {
    const request = formatWebhook(hook, event, { consoleUrl: this.#consoleUrl, now: this.#now() });
    const signal = AbortSignal.any([this.#abort.signal, AbortSignal.timeout(this.#timeoutMs)]);
    try {
      const res = await this.#fetch(request.url, {
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal,
        // A redirect is not followed: it would take the body and its signature elsewhere.
        redirect: "manual",
      });
      // The answer's body is not needed; cancelling it frees the connection.
      await res.body?.cancel().catch(() => {});
      if (res.ok) return { ok: true };
      return {
        ok: false,
        retry: res.status === 429 || res.status >= 500,
        reason: res.status >= 300 && res.status < 400
          ? `HTTP ${res.status} (a redirect, not followed: configure the final URL)`
          : `HTTP ${res.status}`,
        retryAfterMs: retryAfterMs(res.headers.get("retry-after"), this.#now()),
      };
    } catch (err) {
      if (this.#abort.signal.aborted) return { ok: false, retry: false, reason: "stopped" };
      if (signal.aborted) {
        return { ok: false, retry: true, reason: `no answer within ${this.#timeoutMs} ms` };
      }
      return { ok: false, retry: true, reason: describeError(err) };
    }
  }

  #sleep(ms: number): Promise<void> {
    const signal = this.#abort.signal;
    return new Promise((resolve) => {
      if (signal.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
    });
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid URL)";
  }
}

/** The error and its causes on one line (fetch puts the useful part in `cause`), redacted. */
function describeError(err: unknown): string {
  const parts: string[] = [];
  for (let e = err, depth = 0; e !== undefined && e !== null && depth < 4; depth++) {
    parts.push(e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return redactUrls(parts.join(": "));
}

/**
 * Fetch errors quote the URL they failed on (`error sending request for url (…)`), and hook
 * URLs hold secrets: Bark device keys, Slack and Discord tokens. Only the origin is kept.
 */
export function redactUrls(text: string): string {
  return text.replace(/\bhttps?:\/\/[^\s)"'<>]+/gi, (match) => {
    try {
      const url = new URL(match);
      return `${url.protocol}//${url.host}/…`;
    } catch {
      return "(a URL)";
    }
  });
}

/** `Retry-After` in milliseconds (seconds or an HTTP date), capped; undefined when absent. */
function retryAfterMs(header: string | null, now: Date): number | undefined {
  if (header === null || header.trim() === "") return undefined;
  const seconds = Number(header);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(header) - now.getTime();
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

function positive(field: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) {
    throw new Error(
      `Invalid webhook dispatcher option "${field}": expected a positive number, got ${value}`,
    );
  }
  return value;
}

function count(field: string, value: number, min: number): number {
  if (!Number.isInteger(value) || value < min) {
    throw new Error(
      `Invalid webhook dispatcher option "${field}": ` +
        `expected an integer of at least ${min}, got ${value}`,
    );
  }
  return value;
}
