import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import type { NewDataFrame } from "./frames.ts";
import { createIngestHandler, startIngestServer } from "./ingest_server.ts";
import { silentLogger } from "./log.ts";

function setup() {
  const frames: NewDataFrame[] = [];
  const deps = {
    findRun: (runId: string) =>
      runId === "r-1" ? { job_id: "j-1", attempt: 1, run_id: "r-1" } : null,
    emit: (frame: NewDataFrame) => Promise.resolve(frames.push(frame)),
    log: silentLogger,
  };
  return { frames, handler: createIngestHandler(deps), deps };
}

const post = (path: string, body: string) =>
  new Request(`http://127.0.0.1${path}`, { method: "POST", body });

Deno.test("ingest spools a batch as an sdk frame, as sent, and answers with counts", async () => {
  const { frames, handler } = setup();
  const body = JSON.stringify({ points: [{ key: "loss", step: 1, value: "NaN" }], step: 1 });
  const res = await handler(post("/runs/r-1/log", body));
  assertEquals(res.status, 200);
  assertEquals(await res.json(), {
    accepted: { points: 1, checkpoints: 0, logs: 0, evaluation: 0 },
  });
  assertEquals(frames, [{
    type: "sdk",
    stream: "data",
    job_id: "j-1",
    attempt: 1,
    run_id: "r-1",
    batch: { points: [{ key: "loss", step: 1, value: "NaN" }], step: 1 },
  }]);
});

Deno.test("ingest refuses unknown runs, bad JSON and invalid batches with a clear 4xx", async () => {
  const { frames, handler } = setup();
  const unknown = await handler(post("/runs/r-9/log", "{}"));
  assertEquals(unknown.status, 404);
  assertStringIncludes((await unknown.json()).error.message, `Run "r-9" is not running`);
  const notJson = await handler(post("/runs/r-1/log", "{nope"));
  assertEquals(notJson.status, 400);
  const invalid = await handler(post("/runs/r-1/log", JSON.stringify({ points: [{ key: "x" }] })));
  assertEquals(invalid.status, 400);
  assertStringIncludes((await invalid.json()).error.message, "points.0.step");
  const unknownField = await handler(post("/runs/r-1/log", JSON.stringify({ lr: 1 })));
  assertEquals(unknownField.status, 400);
  assertEquals((await handler(new Request("http://127.0.0.1/runs/r-1/log"))).status, 405);
  assertEquals((await handler(post("/other", "{}"))).status, 404);
  assertEquals(frames, []);
});

Deno.test("startIngestServer() listens on 127.0.0.1 at a random port", async () => {
  const { frames, deps } = setup();
  const server = startIngestServer(deps);
  try {
    const res = await fetch(`http://127.0.0.1:${server.port}/runs/r-1/log`, {
      method: "POST",
      body: JSON.stringify({ logs: [{ text: "hello" }] }),
    });
    assertEquals((await res.json()).accepted.logs, 1);
    assertEquals(frames.length, 1);
  } finally {
    await server.stop();
  }
});
