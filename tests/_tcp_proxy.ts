/**
 * A TCP proxy on 127.0.0.1 between an agent and the server, for fault tests (there is no
 * `tc netem` on the machines that test gpuctl). Its mode can change while connections are up:
 *
 * - `pass`: bytes flow both ways.
 * - `delay`: bytes flow, each chunk held `delayMs` first (order kept).
 * - `drop`: every connection is closed cleanly (FIN); new ones are accepted and closed.
 * - `reset`: every connection is closed at once without reading what is pending (Deno has no
 *   SO_LINGER; Linux answers a close with unread bytes with RST, otherwise it sends FIN);
 *   new ones likewise.
 * - `blackhole`: connections stay open and new ones are accepted, but nothing is forwarded
 *   (what arrives is discarded), like a partition that keeps TCP state.
 * - `half-open`: the server side of each connection is closed, the client side is left open
 *   and silent (it never hears a FIN): a peer that vanished without a word.
 *
 * Leaving `blackhole` for `pass` does not revive a connection that lost bytes (its stream is
 * corrupt): the proxy closes those, and the client reconnects.
 */

export type ProxyMode = "pass" | "delay" | "drop" | "reset" | "blackhole" | "half-open";

interface Pair {
  client: Deno.TcpConn;
  upstream: Deno.TcpConn | null;
  /** Bytes were discarded: the stream can no longer be forwarded. */
  broken: boolean;
  /** Left as it was by a mode change that spared open connections: it forwards nothing. */
  frozen: boolean;
  closed: boolean;
}

export class TcpProxy {
  readonly port: number;
  #listener: Deno.TcpListener;
  #target: { hostname: string; port: number };
  #mode: ProxyMode = "pass";
  #delayMs = 0;
  #pairs = new Set<Pair>();
  #accepting: Promise<void>;
  /** Connections accepted since start, for tests. */
  accepted = 0;

  private constructor(listener: Deno.TcpListener, target: { hostname: string; port: number }) {
    this.#listener = listener;
    this.#target = target;
    this.port = (listener.addr as Deno.NetAddr).port;
    this.#accepting = this.#accept();
  }

  /** Listens on 127.0.0.1 (a free port unless given) and forwards to `targetPort` there. */
  static start(targetPort: number, port = 0): TcpProxy {
    const listener = Deno.listen({ hostname: "127.0.0.1", port });
    return new TcpProxy(listener, { hostname: "127.0.0.1", port: targetPort });
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  /** The proxy's address as an http URL (agents take the server's URL). */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Connections open now. */
  get open(): number {
    return [...this.#pairs].filter((p) => !p.closed).length;
  }

  /** Forwards to another port from now on (a restarted server on a new port). */
  retarget(port: number): void {
    this.#target = { ...this.#target, port };
  }

  /**
   * Switches the mode; connections open now follow at once, unless `existing` is false: then
   * they keep what the old mode did to them (a half-open one stays silent forever, as a real
   * one does when nothing tells its peer).
   */
  setMode(mode: ProxyMode, options: { delayMs?: number; existing?: boolean } = {}): void {
    this.#mode = mode;
    this.#delayMs = options.delayMs ?? 0;
    if (options.existing === false) {
      for (const pair of this.#pairs) pair.frozen = true;
      return;
    }
    for (const pair of this.#pairs) this.#enforce(pair);
  }

  /** Stops listening and closes every connection. */
  async close(): Promise<void> {
    this.#listener.close();
    for (const pair of this.#pairs) this.#closePair(pair);
    await this.#accepting;
  }

  async #accept(): Promise<void> {
    for (;;) {
      let client: Deno.TcpConn;
      try {
        client = await this.#listener.accept();
      } catch {
        return; // closed
      }
      this.accepted++;
      const pair: Pair = { client, upstream: null, broken: false, frozen: false, closed: false };
      this.#pairs.add(pair);
      this.#serve(pair).catch(() => this.#closePair(pair));
    }
  }

  async #serve(pair: Pair): Promise<void> {
    if (this.#mode === "drop" || this.#mode === "reset") return this.#enforce(pair);
    if (this.#mode !== "blackhole" && this.#mode !== "half-open") {
      try {
        pair.upstream = await Deno.connect(this.#target);
      } catch {
        // Nothing listens upstream: the client sees its connection closed, as it would.
        return this.#closePair(pair);
      }
    } else {
      pair.broken = true; // nothing it sends will ever be forwarded
    }
    this.#enforce(pair);
    const up = pair.upstream;
    await Promise.all([
      this.#pump(pair, pair.client, () => pair.upstream),
      up ? this.#pump(pair, up, () => pair.client) : Promise.resolve(),
    ]);
    this.#closePair(pair);
  }

  /** Copies `from` to the other side, as the mode says, until `from` ends. */
  async #pump(pair: Pair, from: Deno.TcpConn, to: () => Deno.TcpConn | null): Promise<void> {
    const buf = new Uint8Array(64 * 1024);
    let chain = Promise.resolve();
    for (;;) {
      let n: number | null;
      try {
        n = await from.read(buf);
      } catch {
        break;
      }
      if (n === null) break;
      const chunk = buf.slice(0, n);
      const mode = this.#mode;
      if (mode === "blackhole" || mode === "half-open" || pair.broken || pair.frozen) {
        pair.broken = true;
        continue; // swallowed
      }
      const target = to();
      if (!target) break;
      const delay = mode === "delay" ? this.#delayMs : 0;
      chain = chain.then(async () => {
        if (delay > 0) await new Promise((r) => setTimeout(r, delay));
        if (pair.broken || pair.closed) return;
        await writeAll(target, chunk).catch(() => this.#closePair(pair));
      });
      if (delay === 0) await chain; // keep back-pressure when not delaying
    }
    await chain;
  }

  #enforce(pair: Pair): void {
    if (pair.closed || pair.frozen) return;
    switch (this.#mode) {
      case "drop":
        // FIN both ways first, so each side reads an orderly end of stream.
        for (const conn of [pair.client, pair.upstream]) {
          try {
            conn?.closeWrite();
          } catch {
            // already closed
          }
        }
        this.#closePair(pair);
        return;
      case "reset":
        this.#closePair(pair);
        return;
      case "blackhole":
        // Bytes in flight are lost from now on: the pair can never forward again.
        pair.broken = true;
        return;
      case "half-open":
        pair.broken = true;
        closeQuietly(pair.upstream);
        pair.upstream = null;
        return;
      case "pass":
      case "delay":
        // A connection that lost bytes cannot carry a stream again.
        if (pair.broken) this.#closePair(pair);
        return;
    }
  }

  #closePair(pair: Pair): void {
    if (pair.closed) return;
    pair.closed = true;
    closeQuietly(pair.client);
    closeQuietly(pair.upstream);
    this.#pairs.delete(pair);
  }
}

function closeQuietly(conn: Deno.TcpConn | null): void {
  try {
    conn?.close();
  } catch {
    // already closed
  }
}

async function writeAll(conn: Deno.TcpConn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}
