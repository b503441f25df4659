/** An SSE reader for tests: opens a stream and collects its messages and comment lines. */
import { readSse } from "../cli/sse.ts";

/** A minimal SSE reader for tests: collects `{id, data}` messages and comment lines. */
export interface SseClient {
  // deno-lint-ignore no-explicit-any -- tests read arbitrary JSON messages
  messages: { id: number; data: any }[];
  comments: string[];
  /** Named events (`event: end`), which carry no id. */
  // deno-lint-ignore no-explicit-any -- tests read arbitrary JSON messages
  events: { event: string; data: any }[];
  /** True once the server ended the response (not after close()). */
  ended: boolean;
  /** Resolves once `predicate` holds for the collected messages, or rejects after `ms`. */
  until(predicate: (c: SseClient) => boolean, ms?: number): Promise<void>;
  close(): Promise<void>;
}

/** Opens an SSE stream; messages are parsed by the CLI's reader (`eventsource-parser`). */
export async function openSse(
  url: string,
  token: string,
  lastEventId?: number,
): Promise<SseClient> {
  const abort = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (lastEventId !== undefined) headers["last-event-id"] = String(lastEventId);
  const res = await fetch(url, { headers, signal: abort.signal });
  if (res.status !== 200) throw new Error(`SSE ${url}: ${res.status} ${await res.text()}`);
  const client: SseClient = {
    messages: [],
    comments: [],
    events: [],
    ended: false,
    async until(predicate, ms = 5000) {
      const deadline = Date.now() + ms;
      while (!predicate(client)) {
        if (Date.now() > deadline) {
          throw new Error(
            `SSE condition not met in ${ms} ms; got ${client.messages.length} messages`,
          );
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async close() {
      abort.abort();
      await done.catch(() => {});
    },
  };
  const done = (async () => {
    try {
      for await (const m of readSse(res.body!, (c) => client.comments.push(c))) {
        if (m.event !== undefined) client.events.push({ event: m.event, data: JSON.parse(m.data) });
        else if (m.id !== undefined) {
          client.messages.push({ id: Number(m.id), data: JSON.parse(m.data) });
        }
      }
      client.ended = true;
    } catch {
      // aborted by close(), or the server dropped us
    }
  })();
  return client;
}
