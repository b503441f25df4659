/**
 * Property-based fuzz of every MCP tool under a read and a write token, against the seeded
 * database: each tool's own input fields (and strangers) given hostile values, real ids of
 * the seed, or nothing. Invariants: an answer is a result or a tool error naming a domain code
 * (never `InternalError`, never a protocol failure other than invalid params); a read token
 * changes no row; no token's secret appears in an answer.
 */
import fc from "fast-check";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { assert } from "./assert.ts";
import { seededHarness } from "./_seed.ts";
import { digest } from "./_digest.ts";
import { memoryClient } from "../mcp/_test_client.ts";
import { TOOLS } from "../mcp/mod.ts";
import { MAX_MCP_BATCH } from "../mcp/http.ts";

const HOSTILE: unknown[] = [
  null,
  true,
  -1,
  0,
  1e308,
  0.5,
  "",
  "NaN",
  "\u0000",
  "\ud800",
  "../../etc/passwd",
  "%2e%2e",
  "<script>alert(1)</script>",
  "\x1b[2J",
  "a".repeat(20_000),
  "step>=",
  "LOSS_NAN",
  [],
  {},
  [["x"]],
];

/** A tool's input field names, from its schema. */
function fields(name: string): string[] {
  const def = TOOLS.find((t) => t.name === name)!;
  return Object.keys((def.input as unknown as { shape: Record<string, unknown> }).shape);
}

async function callOnce(client: Client, name: string, args: Record<string, unknown>) {
  try {
    // deno-lint-ignore no-explicit-any -- tool answers are arbitrary JSON
    const res: any = await client.callTool({ name, arguments: args }, undefined, {
      timeout: 30_000,
    });
    return { res, protocolError: null };
  } catch (err) {
    return { res: null, protocolError: err as Error & { code?: number } };
  }
}

Deno.test("fuzz: every MCP tool answers hostile arguments with a domain error, and a read token changes nothing", async () => {
  const { h, seed } = await seededHarness();
  try {
    const ids = [
      seed.failedRun,
      seed.runningRun,
      seed.sdkRun,
      seed.failedJob,
      seed.checkpoint,
      seed.node,
      seed.sweep,
      "nlp/base",
    ];
    const secrets = Object.values(h.tokens);
    await using read = await memoryClient(h.ctx, h.tokens.read);
    await using write = await memoryClient(h.ctx, h.tokens.write);
    const value = fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(...HOSTILE) },
      { weight: 2, arbitrary: fc.constantFrom(...ids) },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
    );
    const attempt = fc.constantFrom(...TOOLS.map((t) => t.name)).chain((name) =>
      fc.record({
        name: fc.constant(name),
        write: fc.boolean(),
        // The tool's own fields, each there or not, with a stranger now and then.
        args: fc.tuple(
          fc.record(
            Object.fromEntries(fields(name).map((f) => [f, value])),
            { requiredKeys: [] },
          ),
          fc.dictionary(fc.string({ maxLength: 8 }), value, { maxKeys: 1 }),
        ).map(([own, strangers]) => ({ ...strangers, ...own }) as Record<string, unknown>),
      })
    );
    let reached = 0;
    await fc.assert(
      fc.asyncProperty(attempt, async ({ name, write: asWriter, args }) => {
        // A wait is bounded to a second; the fuzz is about arguments, not patience.
        if (name === "wait_for_run") args = { ...args, timeout_s: 1 };
        const before = await digest(h.ctx.db);
        const { res, protocolError } = await callOnce(asWriter ? write : read, name, args);
        const what = `${name} ${JSON.stringify(args).slice(0, 200)}`;
        if (protocolError) {
          // The SDK refuses arguments its schema rejects as invalid params (-32602).
          assert(protocolError.code === -32602, `${what}: ${protocolError.message}`);
        } else {
          const text = (res.content as { text: string }[]).map((c) => c.text).join("\n");
          if (!text.startsWith("MCP error -32602:")) reached++;
          if (res.isError) {
            assert(!text.startsWith("InternalError"), `${what}: ${text.slice(0, 300)}`);
            // A domain error names its code; the SDK's own input check says invalid params.
            assert(
              /^[A-Za-z]+:/.test(text) || text.startsWith("MCP error -32602:"),
              `${what}: a tool error names its code: ${text.slice(0, 300)}`,
            );
          }
          for (const s of secrets) assert(!text.includes(s), `${what} answered with a token`);
        }
        if (!asWriter) assert((await digest(h.ctx.db)) === before, `${what} changed the store`);
      }),
      { numRuns: 1000, seed: 20261201 },
    );
    assert(reached > 150, `only ${reached} calls got past the schema to the services`);
  } finally {
    await h.close();
  }
});

Deno.test("fuzz: batches over /mcp — every tool under every scope, each call answered once, caps and scopes hold", async () => {
  const { h, seed } = await seededHarness();
  try {
    const ids = [seed.failedRun, seed.runningRun, seed.sdkRun, seed.failedJob, seed.sweep];
    const secrets = Object.values(h.tokens);
    const value = fc.oneof(
      { weight: 2, arbitrary: fc.constantFrom(...HOSTILE) },
      { weight: 3, arbitrary: fc.constantFrom(...ids) },
    );
    const call = fc.constantFrom(...TOOLS.map((t) => t.name)).chain((name) =>
      fc.record({
        name: fc.constant(name),
        args: fc.record(
          Object.fromEntries(fields(name).map((f) => [f, value])),
          { requiredKeys: [] },
        ) as fc.Arbitrary<Record<string, unknown>>,
      })
    );
    const scopes = ["read", "write", "admin", "agent"] as const;
    // Every tool once under every scope, then random batches, some past the batch cap.
    const everyTool = TOOLS.map((t) => ({ name: t.name, args: {} as Record<string, unknown> }));
    const cases: { scope: typeof scopes[number]; calls: typeof everyTool }[] = scopes.map((
      scope,
    ) => ({ scope, calls: everyTool }));
    const random = fc.sample(
      fc.record({
        scope: fc.constantFrom(...scopes),
        calls: fc.array(call, { minLength: 1, maxLength: MAX_MCP_BATCH + 8 }),
      }),
      { numRuns: 40, seed: 20261202 },
    );
    // A token's first use notes its last_used_at (once a minute); that is not the call's doing.
    for (const scope of scopes) await h.call("GET", "/api/status", { token: h.tokens[scope] });
    for (const c of [...cases, ...random]) {
      const calls = c.calls.map((x) =>
        x.name === "wait_for_run" ? { ...x, args: { ...x.args, timeout_s: 1 } } : x
      );
      const before = await digest(h.ctx.db);
      const res = await h.app.fetch(
        new Request("http://gpuctl.test/mcp", {
          method: "POST",
          headers: {
            authorization: `Bearer ${h.tokens[c.scope]}`,
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
          },
          body: JSON.stringify(calls.map((x, i) => ({
            jsonrpc: "2.0",
            id: i + 1,
            method: "tools/call",
            params: { name: x.name, arguments: x.args },
          }))),
        }),
      );
      const text = await res.text();
      const what = `${c.scope} batch of ${calls.length} (${calls.map((x) => x.name).join(",")})`;
      for (const s of secrets) assert(!text.includes(s), `${what} answered with a token`);
      if (c.scope === "agent") {
        assert(res.status === 403, `${what}: ${res.status}`);
      } else if (calls.length > MAX_MCP_BATCH) {
        assert(res.status === 413 && text.includes("TooManyCalls"), `${what}: ${res.status}`);
      } else {
        assert(res.status === 200, `${what}: ${res.status} ${text.slice(0, 200)}`);
        const answers = [...text.matchAll(/^data: (.*)$/gm)]
          .flatMap((m) => [JSON.parse(m[1])].flat())
          .filter((m) => "result" in m || "error" in m);
        const answered = answers.map((a) => a.id).sort((a, b) => a - b);
        assert(
          JSON.stringify(answered) === JSON.stringify(calls.map((_, i) => i + 1)),
          `${what}: answered ${answered.length} of ${calls.length}`,
        );
        for (const a of answers) {
          const t = a.result?.content?.[0]?.text ?? "";
          assert(!t.startsWith("InternalError"), `${what}: ${t.slice(0, 300)}`);
          if (a.error) assert(a.error.code === -32602, `${what}: ${JSON.stringify(a.error)}`);
          const control = TOOLS.find((d) => d.name === calls[a.id - 1].name)!.kind === "control";
          if (c.scope === "read" && control && a.result) {
            assert(
              a.result.isError && /^(WriteScopeError|MCP error -32602)/.test(t),
              `${what}: a read token's ${calls[a.id - 1].name} answered ${t.slice(0, 200)}`,
            );
          }
        }
      }
      if (c.scope === "read" || c.scope === "agent" || calls.length > MAX_MCP_BATCH) {
        assert((await digest(h.ctx.db)) === before, `${what} changed the store`);
      }
    }
  } finally {
    await h.close();
  }
});
