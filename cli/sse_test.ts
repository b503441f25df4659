import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { ApiError, GpuctlClient } from "./client.ts";
import { followSse, type SseMessage } from "./sse.ts";

/** A server whose first stream breaks off after two messages and whose second resumes. */
function flakyServer() {
  const seen: (string | null)[] = [];
  const encoder = new TextEncoder();
  const controller = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: controller.signal, onListen: () => {} },
    (req) => {
      if (new URL(req.url).pathname !== "/stream") return new Response("{}", { status: 404 });
      const last = req.headers.get("last-event-id");
      seen.push(last);
      const body = last === null
        ? ': hello\n\nid: 1\ndata: {"n":1}\n\nid: 2\ndata: {"n":2}\n\n'
        : `id: ${Number(last) + 1}\ndata: {"n":${Number(last) + 1}}\n\nevent: end\ndata: {}\n\n`;
      return new Response(encoder.encode(body), {
        headers: { "content-type": "text/event-stream" },
      });
    },
  );
  return {
    seen,
    client: new GpuctlClient({ serverUrl: `http://127.0.0.1:${server.addr.port}`, token: "t" }),
    async close() {
      controller.abort();
      await server.finished;
    },
  };
}

Deno.test("followSse() resumes after a dropped stream with Last-Event-ID and stops at event: end", async () => {
  const s = flakyServer();
  try {
    const got: SseMessage[] = [];
    const told: string[] = [];
    for await (
      const m of followSse(s.client, "/stream", {
        onDisconnect: (why) => told.push(`lost: ${why}`),
        onReconnect: () => told.push("back"),
      })
    ) got.push(m);
    assertEquals(got.map((m) => [m.id, m.event, m.data]), [
      ["1", undefined, '{"n":1}'],
      ["2", undefined, '{"n":2}'],
      ["3", undefined, '{"n":3}'],
      [undefined, "end", "{}"],
    ]);
    assertEquals(s.seen, [null, "2"]);
    assertEquals(told, ["lost: the server closed the stream", "back"]);
  } finally {
    await s.close();
  }
});

Deno.test("followSse() does not retry an answer that will not change (404)", async () => {
  const s = flakyServer();
  try {
    let error: unknown;
    try {
      for await (const _ of followSse(s.client, "/missing")) break;
    } catch (err) {
      error = err;
    }
    assertEquals((error as ApiError).status, 404);
    assertStringIncludes((error as Error).message, "GET /missing failed with HTTP 404");
  } finally {
    await s.close();
  }
});
