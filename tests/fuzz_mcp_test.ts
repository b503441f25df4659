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
