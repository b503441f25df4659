/**
 * A WebSocket with request headers (Deno's constructor takes `{ headers }`). The options go
 * through a cast because a program that also type-checks browser code (Preact's JSX types
 * load lib "dom") sees the browser's constructor, which knows only subprotocols.
 */
export function openWebSocket(url: string, headers: Record<string, string>): WebSocket {
  const Ctor = WebSocket as unknown as new (
    url: string,
    options: { headers: Record<string, string> },
  ) => WebSocket;
  return new Ctor(url, { headers });
}
