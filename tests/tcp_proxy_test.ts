/** The fault tests' TCP proxy: each mode does to a live connection what it says. */
import { assert, assertEquals } from "./assert.ts";
import { TcpProxy } from "./_tcp_proxy.ts";

/** An upstream on 127.0.0.1 that echoes every byte back. */
function echoServer() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.TcpConn>();
  const done = (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      (async () => {
        const buf = new Uint8Array(4096);
        try {
          for (;;) {
            const n = await conn.read(buf);
            if (n === null) break;
            await conn.write(buf.subarray(0, n));
          }
        } catch {
          // closed under us
        }
        conns.delete(conn);
        try {
          conn.close();
        } catch {
          // already closed
        }
      })();
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    conns,
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // already closed
        }
      }
      await done.catch(() => {});
    },
  };
}

const enc = new TextEncoder();
const dec = new TextDecoder();

const pending = new WeakMap<Deno.TcpConn, Promise<Uint8Array | null>>();

/**
 * Reads until `want` bytes arrived, the stream ended ("closed") or `ms` passed ("timeout").
 * A read still pending at a timeout is kept for the next call, so no byte is missed.
 */
async function readFor(conn: Deno.TcpConn, want: number, ms: number) {
  let got = "";
  const deadline = Date.now() + ms;
  while (got.length < want) {
    const left = deadline - Date.now();
    if (left <= 0) return { text: got, end: "timeout" as const };
    let read = pending.get(conn);
    if (!read) {
      const buf = new Uint8Array(4096);
      read = conn.read(buf).then((n) => (n === null ? null : buf.subarray(0, n)), () => null);
      pending.set(conn, read);
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const chunk = await Promise.race([
      read,
      new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), left)),
    ]);
    clearTimeout(timer);
    if (chunk === "timeout") return { text: got, end: "timeout" as const };
    pending.delete(conn);
    if (chunk === null) return { text: got, end: "closed" as const };
    got += dec.decode(chunk);
  }
  return { text: got, end: "data" as const };
}

async function withProxy(fn: (p: TcpProxy, echo: ReturnType<typeof echoServer>) => Promise<void>) {
  const echo = echoServer();
  const proxy = TcpProxy.start(echo.port);
  try {
    await fn(proxy, echo);
  } finally {
    await proxy.close();
    await echo.close();
  }
}

const connect = (p: TcpProxy) => Deno.connect({ hostname: "127.0.0.1", port: p.port });

Deno.test("tcp proxy: pass forwards both ways; delay holds each chunk and keeps order", async () => {
  await withProxy(async (proxy) => {
    const conn = await connect(proxy);
    await conn.write(enc.encode("hello"));
    assertEquals(await readFor(conn, 5, 5000), { text: "hello", end: "data" });
    proxy.setMode("delay", { delayMs: 300 });
    const t0 = performance.now();
    await conn.write(enc.encode("a"));
    await conn.write(enc.encode("b"));
    const r = await readFor(conn, 2, 5000);
    assertEquals(r, { text: "ab", end: "data" });
    // Held on the way there and on the way back.
    assert(performance.now() - t0 >= 550, `${performance.now() - t0} ms`);
    conn.close();
  });
});

Deno.test("tcp proxy: drop and reset close live connections and every new one", async () => {
  for (const mode of ["drop", "reset"] as const) {
    await withProxy(async (proxy, echo) => {
      const conn = await connect(proxy);
      await conn.write(enc.encode("x"));
      assertEquals((await readFor(conn, 1, 5000)).text, "x");
      proxy.setMode(mode);
      assertEquals((await readFor(conn, 1, 5000)).end, "closed", mode);
      const again = await connect(proxy);
      assertEquals((await readFor(again, 1, 5000)).end, "closed", mode);
      for (let i = 0; i < 100 && echo.conns.size > 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assertEquals(echo.conns.size, 0, `${mode}: upstream closed too`);
      conn.close();
      again.close();
    });
  }
});

Deno.test("tcp proxy: blackhole keeps connections open and forwards nothing; back to pass, new connections work and the broken one is closed", async () => {
  await withProxy(async (proxy) => {
    const conn = await connect(proxy);
    proxy.setMode("blackhole");
    await conn.write(enc.encode("lost"));
    assertEquals(await readFor(conn, 1, 500), { text: "", end: "timeout" });
    const fresh = await connect(proxy); // accepted, but silent
    await fresh.write(enc.encode("also lost"));
    assertEquals(await readFor(fresh, 1, 300), { text: "", end: "timeout" });
    assertEquals(proxy.open, 2);
    proxy.setMode("pass");
    assertEquals((await readFor(conn, 1, 5000)).end, "closed");
    assertEquals((await readFor(fresh, 1, 5000)).end, "closed");
    const next = await connect(proxy);
    await next.write(enc.encode("ok"));
    assertEquals(await readFor(next, 2, 5000), { text: "ok", end: "data" });
    conn.close();
    fresh.close();
    next.close();
  });
});

Deno.test("tcp proxy: half-open closes the upstream side and leaves the client open and unanswered, also once new connections pass", async () => {
  await withProxy(async (proxy, echo) => {
    const conn = await connect(proxy);
    await conn.write(enc.encode("x"));
    assertEquals((await readFor(conn, 1, 5000)).text, "x");
    proxy.setMode("half-open");
    for (let i = 0; i < 100 && echo.conns.size > 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    assertEquals(echo.conns.size, 0, "the server saw its connection end");
    await conn.write(enc.encode("y"));
    assertEquals(await readFor(conn, 1, 500), { text: "", end: "timeout" });
    assertEquals(proxy.open, 1, "the client side is still open");
    // Healed for new connections only: the half-open one stays silent, new ones pass.
    proxy.setMode("pass", { existing: false });
    await conn.write(enc.encode("z"));
    assertEquals(await readFor(conn, 1, 300), { text: "", end: "timeout" });
    const fresh = await connect(proxy);
    await fresh.write(enc.encode("ok"));
    assertEquals(await readFor(fresh, 2, 5000), { text: "ok", end: "data" });
    conn.close();
    fresh.close();
  });
});

Deno.test("tcp proxy: retarget sends new connections to another upstream", async () => {
  await withProxy(async (proxy) => {
    const other = echoServer();
    try {
      proxy.retarget(other.port);
      const conn = await connect(proxy);
      await conn.write(enc.encode("z"));
      assertEquals((await readFor(conn, 1, 5000)).text, "z");
      assertEquals(other.conns.size, 1);
      conn.close();
    } finally {
      await other.close();
    }
  });
});
