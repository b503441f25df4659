/**
 * Property-based fuzz of every REST route under every scope (none, read, write, admin,
 * agent), against the seeded database: hostile path ids, query values and bodies (wrong
 * types, NaN/Infinity spelled out, megabyte strings, deep JSON, lone surrogates, `../`,
 * `%2e%2e`, `#`, NUL, ANSI escapes, `<script>`, bytes that are not UTF-8).
 *
 * Invariants, for every request: never a 5xx; a 4xx changes nothing (a digest of every row
 * of every table before and after) and answers `{error: {code, message}}`; a read token or
 * no token changes nothing whatever the status; a 2xx JSON body parses; no token's secret
 * appears in an answer or in the server's log.
 */
import fc from "fast-check";
import { assert, assertEquals } from "./assert.ts";
import { seededHarness } from "./_seed.ts";
import { digest } from "./_digest.ts";
import type { Harness } from "./_harness.ts";
import type { RouteDef } from "../server/http/route.ts";

type Scope = "none" | "read" | "write" | "admin" | "agent";
const SCOPES: Scope[] = ["none", "read", "write", "admin", "agent"];

/** Strings that have broken parsers, routers and renderers elsewhere. */
const NASTY = [
  "",
  " ",
  "../../etc/passwd",
  "..%2f..%2fetc%2fpasswd",
  "%2e%2e",
  "%2e%2e%2f",
  "#",
  "a#b",
  "?",
  "\u0000",
  "nul\u0000byte",
  "\ud800",
  "lone\udfffsurrogate",
  "\x1b[31mred\x1b[0m",
  "<script>alert(1)</script>",
  "<img src=x onerror=alert(1)>",
  "NaN",
  "Infinity",
  "-Infinity",
  "1e309",
  "-1",
  "0",
  "99999999999999999999999",
  "true",
  "null",
  "[]",
  "{}",
  "r-none",
  "j-none",
  "%",
  "%zz",
  "a".repeat(5000),
];

/** Query names the routes read; random ones are added too. */
const QUERY_KEYS = [
  "limit",
  "cursor",
  "status",
  "project",
  "experiment",
  "node_id",
  "run_id",
  "job_id",
  "type",
  "severity",
  "q",
  "source",
  "keys",
  "key",
  "max_points",
  "after_seq",
  "after",
  "runs",
  "metric",
  "run",
];

const nastyString = fc.oneof(
  fc.constantFrom(...NASTY),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 20 }),
);

/** JSON values of every shape, nasty strings among the leaves. */
const jsonBody = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: "small" },
    nastyString,
    fc.double(),
    fc.integer(),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie("value"), { maxLength: 4 }),
    fc.dictionary(
      fc.oneof(fc.constantFrom(...QUERY_KEYS, "name", "command", "gpus"), fc.string()),
      tie("value"),
      {
        maxKeys: 5,
      },
    ),
  ),
})).value;

/** What a request carries: raw bytes, or JSON text. */
type Body = { raw: Uint8Array<ArrayBuffer> } | { text: string } | null;

const hugeOrDeep: fc.Arbitrary<Body> = fc.constantFrom<Body>(
  { text: JSON.stringify({ name: "x".repeat(1_100_000) }) },
  { text: "[".repeat(20_000) + "]".repeat(20_000) },
  { text: '{"a":'.repeat(5_000) + "1" + "}".repeat(5_000) },
  { raw: new Uint8Array([0xff, 0xfe, 0x7b, 0x7d]) },
  { text: "{not json" },
  { text: "" },
);

const body: fc.Arbitrary<Body> = fc.oneof(
  { weight: 6, arbitrary: jsonBody.map((v) => ({ text: JSON.stringify(v) ?? "null" })) },
  { weight: 1, arbitrary: hugeOrDeep },
  { weight: 1, arbitrary: fc.constant(null) },
);

/** A valid body of each route that takes one: mutated one field at a time, to get past the top. */
const VALID: Record<string, Record<string, unknown>> = {
  "/api/tokens": { name: "ci", scope: "read" },
  "/api/jobs": {
    name: "fuzz",
    command: ["python", "train.py"],
    working_dir: "/srv",
    gpus: 1,
    env: { LR: "0.1" },
    project: "nlp",
    experiment: "base",
    after: [],
    stop_on: ["LOSS_NAN"],
  },
  "/api/checkpoints/:id/evaluations": { suite: "glue", command: "python eval.py" },
  "/api/runs/metrics:query": { runs: ["r-none"], keys: ["train/loss"], max_points: 10 },
  "/api/projects": { name: "fuzz", description: "d" },
  "/api/experiments": { project: "nlp", name: "fuzz" },
  "/api/metric-definitions": {
    definitions: [{ scope: "global", key: "train/loss", direction: "min" }],
  },
  "/api/metric-definitions/primary": { scope: "project", scope_id: "nlp", key: "train/loss" },
  "/api/imports": { import_key: "k", project: "nlp", name: "old", points: [] },
  "/api/sdk/runs": { project: "nlp", name: "fuzz" },
  "/api/sweeps": {
    name: "fuzz",
    project: "nlp",
    base: { name: "t", command: ["python", "t.py"], working_dir: "/srv", gpus: 1 },
    parameters: { lr: { min: 0.001, max: 0.1, scale: "log", count: 2 } },
    max_parallel: 1,
    early_stop: { min_steps: 10, every: 10, keep_fraction: 0.5 },
  },
  "/api/sweeps/:id/cancel": { let_running_finish: true },
  "/api/sdk/runs/:id/log": {
    points: [{ key: "loss", step: 1, value: 1 }],
    logs: [{ seq: 0, stream: "stdout", text: "hi" }],
    step: 1,
  },
};

/** A valid body with one field replaced by a hostile value, or dropped. */
function mutated(valid: Record<string, unknown>): fc.Arbitrary<Body> {
  const value = fc.oneof({ weight: 3, arbitrary: nastyString }, { weight: 1, arbitrary: jsonBody });
  return fc.tuple(fc.constantFrom(...Object.keys(valid)), value, fc.boolean()).map(
    ([key, value, drop]) => {
      const copy: Record<string, unknown> = { ...valid };
      if (drop) delete copy[key];
      else copy[key] = value;
      return { text: JSON.stringify(copy) };
    },
  );
}

interface Attempt {
  scope: Scope;
  id: string;
  /** Encode the id for the path (false: put it in raw, as a hostile client would). */
  encode: boolean;
  query: [string, string][];
  body: Body;
}

function attempt(route: RouteDef, ids: string[]): fc.Arbitrary<Attempt> {
  const valid = VALID[route.path];
  return fc.record({
    scope: fc.constantFrom(...SCOPES),
    id: fc.oneof(nastyString, fc.constantFrom(...ids)),
    encode: fc.boolean(),
    query: fc.array(
      fc.tuple(fc.oneof(fc.constantFrom(...QUERY_KEYS), fc.string({ maxLength: 8 })), nastyString),
      { maxLength: 4 },
    ),
    body: valid
      ? fc.oneof(
        { weight: 1, arbitrary: body },
        { weight: 4, arbitrary: mutated(valid) },
        { weight: 1, arbitrary: fc.constant({ text: JSON.stringify(valid) }) },
      )
      : body,
  });
}

function pathOf(route: RouteDef, a: Attempt): string {
  const id = a.encode ? encodeURIComponent(a.id) : a.id.replace(/[\s?]/g, "_");
  const path = route.path.replace(":id", id);
  const query = a.query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`);
  return query.length ? `${path}?${query.join("&")}` : path;
}

/** One request as a client would send it; streams are cancelled once their headers came. */
async function send(h: Harness, route: RouteDef, a: Attempt) {
  const headers: Record<string, string> = {};
  if (a.scope !== "none") headers.authorization = `Bearer ${h.tokens[a.scope]}`;
  // MCP's transport wants both; without them every call stops at a 406.
  if (route.path === "/mcp") headers.accept = "application/json, text/event-stream";
  let reqBody: BodyInit | undefined;
  if (route.method !== "GET" && a.body !== null) {
    headers["content-type"] = "application/json";
    reqBody = "raw" in a.body ? a.body.raw : a.body.text;
  }
  let url: string;
  try {
    url = new URL(`http://gpuctl.test${pathOf(route, a)}`).href;
  } catch {
    return null; // not a URL any client could send
  }
  const res = await h.app.fetch(new Request(url, { method: route.method, headers, body: reqBody }));
  const type = res.headers.get("content-type") ?? "";
  // A stream, or a wait that was accepted (its answer comes when the wait ends, up to 600 s
  // later): what the fuzz checks is that it was taken, so the client leaves, as one may.
  if (type.startsWith("text/event-stream") || (route.path.endsWith("/wait") && res.ok)) {
    await res.body?.cancel();
    return { status: res.status, text: "", type: "" };
  }
  return { status: res.status, text: await res.text(), type };
}

/** How the fuzzed requests came out, by status class, to show they reached past validation. */
const outcomes = new Map<string, number>();

async function check(h: Harness, route: RouteDef, a: Attempt, secrets: string[]) {
  const before = await digest(h.ctx.db);
  const logged = (h.ctx.log as unknown as { lines: string[] }).lines.length;
  const res = await send(h, route, a);
  if (res === null) return;
  const klass = `${route.method === "GET" ? "read" : "write"} ${Math.floor(res.status / 100)}xx`;
  outcomes.set(klass, (outcomes.get(klass) ?? 0) + 1);
  const what = `${route.method} ${pathOf(route, a).slice(0, 200)} as ${a.scope}: ${res.status}`;
  assert(res.status < 500, `${what} ${res.text.slice(0, 300)}`);
  const after = await digest(h.ctx.db);
  if (res.status >= 400) {
    assertEquals(after, before, `${what} changed the store`);
    const err = JSON.parse(res.text);
    // REST answers {error: {code, message}}; MCP's transport a JSON-RPC error (numeric code).
    const code = typeof err?.error?.code;
    assert(
      (code === "string" || (route.path === "/mcp" && code === "number")) &&
        typeof err.error.message === "string",
      what,
    );
  } else if (res.type.startsWith("application/json")) {
    JSON.parse(res.text);
  }
  if (a.scope === "read" || a.scope === "none") {
    assertEquals(after, before, `${what} changed the store with a ${a.scope} token`);
  }
  const newLog = (h.ctx.log as unknown as { lines: string[] }).lines.slice(logged).join("\n");
  for (const secret of secrets) {
    assert(!res.text.includes(secret), `${what} answered with a token`);
    assert(!newLog.includes(secret), `${what} logged a token`);
  }
}

/** The seeded harness, with every token used once so `last_used_at` stays put. */
async function fuzzHarness() {
  const { h, seed } = await seededHarness();
  // A gateway that hangs up: the socket route is fuzzed up to the upgrade, not beyond.
  h.ctx.agents = { attach: (socket) => socket.close() };
  for (const scope of ["read", "write", "admin", "agent"] as const) {
    await h.call("GET", "/api/auth/whoami", { token: h.tokens[scope] });
  }
  const secrets = Object.values(h.tokens);
  const ids = [
    seed.failedRun,
    seed.runningRun,
    seed.sdkRun,
    seed.failedJob,
    seed.runningJob,
    seed.checkpoint,
    seed.evaluation,
    seed.node,
  ];
  return { h, secrets, ids };
}

Deno.test("fuzz: every route under every scope answers hostile input with a 4xx that changes nothing", async () => {
  const { h, secrets, ids } = await fuzzHarness();
  try {
    // Each route once per scope with each kind of hostile body, so none is left to chance.
    for (const route of h.app.routes) {
      for (const scope of SCOPES) {
        for (const b of [null, { text: "{not json" }, { text: '{"name":"\\ud800"}' }]) {
          await check(
            h,
            route,
            { scope, id: "..%2f%2e%2e", encode: false, query: [], body: b },
            secrets,
          );
        }
      }
    }
    // Each field of each valid body with each hostile value, under the route's own scope.
    for (const route of h.app.routes) {
      const valid = VALID[route.path];
      if (!valid) continue;
      const scope = route.scope === "admin" ? "admin" : "write";
      for (const key of Object.keys(valid)) {
        for (const value of [...NASTY, 1e308, -1, 1.5, [], {}, null, true]) {
          const b = { text: JSON.stringify({ ...valid, [key]: value }) };
          await check(h, route, { scope, id: ids[0], encode: true, query: [], body: b }, secrets);
        }
      }
    }
    // Then random combinations.
    await fc.assert(
      fc.asyncProperty(
        // Routes that take a body come up three times as often: they have more to get wrong.
        fc.oneof(
          ...h.app.routes.map((r) => ({
            weight: VALID[r.path] ? 3 : 1,
            arbitrary: fc.constant(r),
          })),
        ).chain((route) => attempt(route, ids).map((a) => [route, a] as const)),
        ([route, a]) => check(h, route, a, secrets),
      ),
      { numRuns: 1000, seed: 20261201 },
    );
    // The fuzz reached the services, not only the validators: writes succeeded too.
    assert((outcomes.get("write 2xx") ?? 0) > 20, JSON.stringify(Object.fromEntries(outcomes)));
    assert((outcomes.get("read 2xx") ?? 0) > 20, JSON.stringify(Object.fromEntries(outcomes)));
  } finally {
    await h.close();
  }
});
