/**
 * Malformed input at every endpoint: each gets a 4xx whose message names the field and the
 * problem, nothing is half-written, and the server keeps serving.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { createHarness, type Harness, withHarness } from "./_harness.ts";
import { EVENT_TYPES } from "../protocol/event_types.ts";
import { emitEvent } from "../server/events/emit.ts";

const job = { name: "j", command: ["python", "t.py"], working_dir: "/w", gpus: 1 };

function rowCount(h: Harness): number {
  const tables = [
    "jobs",
    "runs",
    "projects",
    "experiments",
    "tokens",
    "metric_points",
    "logs",
    "checkpoints",
    "events",
    "metric_definitions",
  ];
  return tables.reduce(
    (n, t) => n + Number(h.ctx.db.sqlite.prepare(`SELECT COUNT(*) AS n FROM ${t}`).get()!.n),
    0,
  );
}

/** Every endpoint that takes a JSON body, with a valid body to break. */
function bodyEndpoints(runId: string): [string, string, Record<string, unknown>][] {
  return [
    ["POST", "/api/jobs", job],
    ["POST", "/api/tokens", { name: "t", scope: "read" }],
    ["POST", "/api/projects", { name: "p" }],
    ["POST", "/api/experiments", { project: "default", name: "e" }],
    ["PUT", "/api/metric-definitions", {
      definitions: [{ scope: "global", key: "k", direction: "min" }],
    }],
    ["POST", "/api/sdk/runs", { project: "p" }],
    ["POST", "/api/imports", { import_key: "k", project: "p", name: "n" }],
    ["POST", `/api/sdk/runs/${runId}/log`, { points: [{ key: "loss", step: 1, value: 1 }] }],
    ["POST", "/api/runs/metrics:query", { runs: [runId], keys: ["loss"] }],
  ];
}

async function setup() {
  const h = await createHarness();
  const run = await h.call("POST", "/api/sdk/runs", {
    body: { id: "r-target0001", project: "default" },
  });
  assertEquals(run.status, 201);
  return h;
}

Deno.test("malformed, empty, non-object, oversized and deeply nested bodies are 4xx everywhere", async () => {
  const h = await setup();
  try {
    const before = rowCount(h);
    const deep = "[".repeat(100_000) + "]".repeat(100_000);
    const cases: [string, BodyInit, number, string][] = [
      ["malformed JSON", '{"name": "x",', 400, "not JSON"],
      ["empty body", "", 400, "body is empty"],
      ["an array", "[1,2,3]", 400, "Invalid"],
      ["a string", '"hello"', 400, "Invalid"],
      ["NaN literal", '{"gpus": NaN}', 400, "not JSON"],
      ["deep nesting", deep, 400, "Invalid"],
      ["not UTF-8", new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), 400, "UTF-8"],
      ["over 10 MB", `{"name": "${"x".repeat(10 * 1024 * 1024 + 10)}"}`, 413, "too large"],
    ];
    for (const [method, path] of bodyEndpoints("r-target0001")) {
      for (const [what, raw, status, text] of cases) {
        const res = await h.call(method, path, {
          raw,
          headers: { "content-type": "application/json" },
        });
        assertEquals(
          res.status,
          status,
          `${method} ${path} with ${what}: ${res.text.slice(0, 200)}`,
        );
        assertStringIncludes(res.json.error.message, text, `${method} ${path} with ${what}`);
      }
    }
    assertEquals(rowCount(h), before);
    assertEquals((await h.call("GET", "/api/auth/whoami")).status, 200);
  } finally {
    await h.close();
  }
});

Deno.test("job submissions: each wrong field is named with its problem, and nothing is stored", async () => {
  const h = await setup();
  try {
    const before = rowCount(h);
    const cases: [Record<string, unknown>, string][] = [
      [{ ...job, name: undefined }, "name"],
      [{ ...job, name: "" }, "name"],
      [{ ...job, name: "x".repeat(1_000_000) }, "name"],
      [{ ...job, command: [] }, "command"],
      [{ ...job, command: 42 }, "command"],
      [{ ...job, command: "python t.py", shell: false }, "command"],
      [{ ...job, working_dir: undefined }, "working_dir"],
      [{ ...job, gpus: -1 }, "gpus"],
      [{ ...job, gpus: 1.5 }, "gpus"],
      [{ ...job, gpus: "2" }, "gpus"],
      [{ ...job, gpus: 1e999 }, "gpus"],
      [{ ...job, priority: 1e400 }, "priority"],
      [{ ...job, max_attempts: 0 }, "max_attempts"],
      [{ ...job, max_attempts: 21 }, "max_attempts"],
      [{ ...job, env: { "bad-name": "1" } }, "env"],
      [{ ...job, env: { lower: "1" } }, "env"],
      [{ ...job, env: { OK: 1 } }, "env.OK"],
      [{ ...job, runner: "kubernetes" }, "runner"],
      [{ ...job, runner: "docker" }, "image"],
      [{ ...job, after: ["not an id!"] }, "after.0"],
      [{ ...job, surprise: true }, "surprise"],
      [{ ...job, grace_s: -1 }, "grace_s"],
    ];
    for (const [body, field] of cases) {
      // 1e999 and 1e400 must reach the server as numbers, so they are spliced into the text.
      const raw = JSON.stringify(body).replace('"gpus":null', '"gpus":1e999')
        .replace('"priority":null', '"priority":1e400');
      const res = await h.call("POST", "/api/jobs", { raw });
      assertEquals(res.status, 400, `${field}: ${res.text.slice(0, 300)}`);
      assertEquals(res.json.error.code, "ValidationError");
      assert(
        res.json.error.details.some((d: { field: string }) => d.field === field) ||
          res.json.error.message.includes(`${field}`),
        `${field} is not named in ${res.text.slice(0, 300)}`,
      );
    }
    assertEquals(rowCount(h), before);
  } finally {
    await h.close();
  }
});

Deno.test("SDK batches keep their valid part: each bad item is refused by name and not stored", async () => {
  const h = await setup();
  try {
    const cases: [Record<string, unknown>, string][] = [
      [
        { points: [{ key: "a", step: 1, value: 1 }, { key: "a", step: -1, value: 1 }] },
        "points.1.step",
      ],
      [{ points: [{ key: "a", step: 1, value: "nan" }] }, "points.0.value"],
      [{ points: [{ key: "", step: 1, value: 1 }] }, "points.0.key"],
      [{ points: [{ key: "a", step: 1.5, value: 1 }] }, "points.0.step"],
      [{ logs: [{ text: 5 }] }, "logs.0.text"],
      [{ checkpoints: [{ step: 1 }] }, "checkpoints.0.path"],
      [{ status: "DONE" }, "status"],
      [{ points: [{ key: "a", step: 1, value: 1 }], config: { a: nested(40) } }, "config.a"],
    ];
    for (const [body, field] of cases) {
      const res = await h.call("POST", "/api/sdk/runs/r-target0001/log", { body });
      assertEquals(res.status, 200, `${field}: ${res.text.slice(0, 300)}`);
      assert(
        res.json.refused.items.some((d: { path: string }) => d.path === field),
        `${field} not in ${res.text.slice(0, 300)}`,
      );
    }
    // Only the one valid point (sent twice) was stored; no config, status or log line.
    const q = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: ["r-target0001"], keys: ["a"] },
    });
    assertEquals(q.json.series[0].steps, [1]);
    const run = (await h.call("GET", "/api/runs/r-target0001")).json;
    assertEquals([run.status, run.config.a], ["RUNNING", undefined]);
    const unknown = await h.call("POST", "/api/sdk/runs/r-nosuchrun/log", {
      body: { points: [{ key: "a", step: 1, value: 1 }] },
    });
    assertEquals([unknown.status, unknown.json.error.message], [
      404,
      'Run "r-nosuchrun" does not exist',
    ]);
  } finally {
    await h.close();
  }
});

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = { v };
  return v;
}

Deno.test("bad query strings are 400s that name the parameter", async () => {
  const h = await setup();
  try {
    const cases: [string, string][] = [
      ["/api/jobs?limit=abc", "limit"],
      ["/api/jobs?limit=0", "limit"],
      ["/api/jobs?limit=100000", "limit"],
      ["/api/jobs?cursor=xyz", "cursor"],
      ["/api/jobs?status=DONE", "status"],
      ["/api/runs?status=nope", "status"],
      ["/api/events?severity=loud", "severity"],
      ["/api/runs/r-target0001/logs?after_seq=-1", "after_seq"],
      ["/api/runs/r-target0001/metrics?max_points=1", "max_points"],
    ];
    for (const [path, field] of cases) {
      const res = await h.call("GET", path, { token: h.tokens.read });
      assertEquals(res.status, 400, path);
      assertStringIncludes(res.json.error.message, field, path);
    }
  } finally {
    await h.close();
  }
});

Deno.test("unknown ids are 404s on every endpoint that takes one", async () => {
  const h = await setup();
  try {
    const cases: [string, string][] = [
      ["GET", "/api/jobs/j-missing"],
      ["GET", "/api/runs/r-missing"],
      ["GET", "/api/runs/r-missing/metrics"],
      ["GET", "/api/runs/r-missing/logs"],
      ["GET", "/api/runs/r-missing/logs/stream"],
      ["GET", "/api/runs/r-missing/metrics/stream"],
      ["GET", "/api/runs/r-missing/checkpoints"],
      ["GET", "/api/nodes/n-missing"],
      ["DELETE", "/api/tokens/t-missing"],
      ["GET", "/api/no/such/route"],
    ];
    for (const [method, path] of cases) {
      const res = await h.call(method, path);
      assertEquals(res.status, 404, path);
      assertEquals(res.json.error.code, "NotFound");
    }
  } finally {
    await h.close();
  }
});

Deno.test("an unknown event type is a 400 that lists the types; a known or stored one filters", async () => {
  await withHarness(async (h) => {
    for (const path of ["/api/events?type=BOGUS", "/api/events/stream?type=BOGUS"]) {
      const res = await h.call("GET", path, { token: h.tokens.read });
      assertEquals(res.status, 400, path);
      assertEquals(res.json.error.details[0].field, "type");
      assertStringIncludes(res.json.error.message, 'unknown event type "BOGUS"');
      for (const type of EVENT_TYPES) assertStringIncludes(res.json.error.message, type);
    }
    assertEquals((await h.call("GET", "/api/events?type=LOSS_NAN")).status, 200);
    // A type this server does not know but has stored (an agent newer than the server).
    h.ctx.db.tx(() =>
      emitEvent(h.ctx, { type: "NEWER_AGENT_EVENT", severity: "info", message: "from an agent" })
    );
    const stored = await h.call("GET", "/api/events?type=NEWER_AGENT_EVENT");
    assertEquals(stored.json.items.map((e: { message: string }) => e.message), ["from an agent"]);
  });
});

Deno.test("a wrong method on a path the API serves is a 405 with Allow; an unknown path stays 404", async () => {
  await withHarness(async (h) => {
    const cases: [string, string, string][] = [
      ["DELETE", "/api/jobs", "GET, HEAD, POST"],
      ["GET", "/api/jobs/j-1/cancel", "POST"],
      ["PUT", "/api/tokens/t-1", "DELETE"],
      ["POST", "/api/health", "GET, HEAD"],
    ];
    for (const [method, path, allow] of cases) {
      const res = await h.app.fetch(new Request(`http://gpuctl.test${path}`, { method }));
      assertEquals([res.status, res.headers.get("allow")], [405, allow], `${method} ${path}`);
      const body = await res.json();
      assertEquals(body.error.code, "MethodNotAllowed");
      assertStringIncludes(body.error.message, `${method} is not allowed on "${path}"`);
    }
    // Every route of the table: a method none of them serves is refused with the route's own.
    for (const r of h.app.routes) {
      const path = r.path.replace(/\/:[a-z_]+/g, "/x-1");
      const res = await h.call("PATCH", path);
      assertEquals(res.status, 405, `PATCH ${path}`);
      assertStringIncludes(res.json.error.message, r.method, `PATCH ${path}`);
    }
    const unknown = await h.call("DELETE", "/api/no/such/route");
    assertEquals([unknown.status, unknown.json.error.code], [404, "NotFound"]);
  });
});

Deno.test("ids and paths echoed in error messages are cut at 100 characters", async () => {
  await withHarness(async (h) => {
    const long = "r".repeat(5000);
    const cases: [string, string][] = [
      ["GET", `/api/runs/${long}`],
      ["GET", `/api/jobs/${long}`],
      ["POST", `/api/jobs/${long}/cancel`],
      ["GET", `/api/nodes/${long}`],
      ["DELETE", `/api/tokens/${long}`],
      ["GET", `/api/checkpoints/${long}/evaluations`],
      ["GET", `/api/evaluations/${long}`],
      ["GET", `/api/runs/${long}/diagnosis`],
      ["GET", `/api/no/such/${long}`],
    ];
    for (const [method, path] of cases) {
      const res = await h.call(method, path);
      assertEquals(res.status, 404, `${method} ${path.slice(0, 40)}`);
      const message: string = res.json.error.message;
      assertStringIncludes(message, `…" (${path.includes("such") ? 5013 : 5000} characters)`);
      assert(message.length < 200, `${message.length} characters: ${message.slice(0, 200)}`);
    }
  });
});

Deno.test("a job's env name that breaks the rule is refused with the rule in the message", async () => {
  await withHarness(async (h) => {
    const res = await h.call("POST", "/api/jobs", {
      body: { ...job, env: { "bad-name": "1", OK_NAME: "2" } },
    });
    assertEquals(res.status, 400);
    assertEquals(res.json.error.details[0].field, "env.bad-name");
    assertStringIncludes(res.json.error.message, "env.bad-name: is not a valid environment");
    assertStringIncludes(res.json.error.message, "[A-Z_][A-Z0-9_]*");
    assertEquals((await h.call("GET", "/api/jobs")).json.items, []);
  });
});
