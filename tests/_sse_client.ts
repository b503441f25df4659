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
    const decoder = new TextDecoder();
    let buffer = "";
    const reader = res.body!.getReader();
    for (;;) {
      let chunk: Uint8Array;
      try {
        const r = await reader.read();
        if (r.done) {
          client.ended = true;
          break;
        }
        chunk = r.value;
      } catch {
        break; // aborted by close(), or the server dropped us
      }
      buffer += decoder.decode(chunk, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let id: number | null = null;
        let event: string | null = null;
        let data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) client.comments.push(line.slice(1).trim());
          else if (line.startsWith("id: ")) id = Number(line.slice(4));
          else if (line.startsWith("event: ")) event = line.slice(7);
          else if (line.startsWith("data: ")) data += line.slice(6);
        }
        if (event !== null) client.events.push({ event, data: JSON.parse(data) });
        else if (id !== null) client.messages.push({ id, data: JSON.parse(data) });
      }
    }
  })();
  return client;
}
