/** A server context over a fresh database, with a token of each scope, for API tests. */
import { type Context, createContext } from "../server/context.ts";
import { openDatabase } from "../server/db/mod.ts";
import { createApp } from "../server/http/app.ts";
import { createToken } from "../server/auth/service.ts";
import { memoryLogger } from "../server/log.ts";

export interface Harness {
  ctx: Context;
  app: ReturnType<typeof createApp>;
  tokens: { admin: string; write: string; read: string; agent: string };
  dir: string;
  /** Calls the app handler like a client would; `body` objects are sent as JSON. */
  call(
    method: string,
    path: string,
    opts?: {
      token?: string | null;
      body?: unknown;
      raw?: BodyInit;
      headers?: Record<string, string>;
    },
    // deno-lint-ignore no-explicit-any -- tests read arbitrary JSON answers
  ): Promise<{ status: number; json: any; text: string }>;
  close(): Promise<void>;
}

export async function createHarness(
  options: { sse?: Context["sse"]; now?: () => Date } = {},
): Promise<Harness> {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-test-" });
  const db = openDatabase(`${dir}/gpuctl.db`);
  const log = memoryLogger();
  const ctx = createContext({
    db,
    log,
    now: options.now,
    backupDir: `${dir}/backups`,
    sse: options.sse,
  });
  const make = (scope: "admin" | "write" | "read" | "agent") =>
    createToken(ctx, { name: `test-${scope}`, scope }).token;
  const tokens = {
    admin: make("admin"),
    write: make("write"),
    read: make("read"),
    agent: make("agent"),
  };
  const app = createApp(ctx);
  return {
    ctx,
    app,
    tokens,
    dir,
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = { ...opts.headers };
      const token = opts.token === undefined ? tokens.admin : opts.token;
      if (token) headers.authorization = `Bearer ${token}`;
      let body: BodyInit | undefined = opts.raw;
      if (opts.body !== undefined && method !== "GET" && method !== "HEAD") {
        body = JSON.stringify(opts.body);
        headers["content-type"] = "application/json";
      }
      const res = await app.fetch(
        new Request(`http://gpuctl.test${path}`, { method, headers, body }),
      );
      const text = await res.text();
      let json: unknown = null;
      try {
        json = JSON.parse(text);
      } catch {
        // not JSON: callers look at text
      }
      return { status: res.status, json, text };
    },
    async close() {
      db.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

/** Runs `test` against a fresh harness and closes it afterwards. */
export async function withHarness(
  test: (h: Harness) => void | Promise<void>,
  options?: Parameters<typeof createHarness>[0],
): Promise<void> {
  const h = await createHarness(options);
  try {
    await test(h);
  } finally {
    await h.close();
  }
}

/** A console session cookie (`name=value`) for one of the harness's tokens, signed in by form. */
export async function consoleSession(h: Harness, scope: "admin" | "read"): Promise<string> {
  const res = await h.app.fetch(
    new Request("http://gpuctl.test/login", {
      method: "POST",
      headers: { origin: "http://gpuctl.test" },
      body: new URLSearchParams({ token: h.tokens[scope] }),
    }),
  );
  return res.headers.get("set-cookie")!.split(";")[0];
}
