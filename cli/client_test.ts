import { assert, assertEquals, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import { ApiError, GpuctlClient } from "./client.ts";
import { closedPort, startTestServer } from "./_test_server.ts";

Deno.test("GpuctlClient sends the bearer token and JSON, and reads JSON answers", async () => {
  const server = await startTestServer();
  try {
    const client = new GpuctlClient({ serverUrl: server.url + "/", token: server.h.tokens.write });
    const { run, created } = await client.registerSdkRun({ id: "r-client1", project: "p" });
    assertEquals([run.id, run.project, created], ["r-client1", "p", true]);
    assertEquals((await client.registerSdkRun({ id: "r-client1" })).created, false);
    const accepted = await client.logBatch("r-client1", {
      points: [{ key: "loss", step: 0, value: "NaN" }, { key: "loss", step: 1, value: 0.5 }],
    });
    assertEquals(accepted.points, 2);
    assertEquals((await client.getRun("r-client1")).step, 1);
  } finally {
    await server.close();
  }
});

Deno.test("GpuctlClient turns an {error: {code, message}} answer into an error with that message", async () => {
  const server = await startTestServer();
  try {
    const client = new GpuctlClient({ serverUrl: server.url, token: server.h.tokens.read });
    const err = await assertRejects(() => client.registerSdkRun({ id: "r-x" }));
    assert(err instanceof ApiError);
    assertEquals([err.status, err.code], [403, "WriteScopeError"]);
    assertStringIncludes(err.message, 'Token "test-read" has scope "read"');

    const missing = await assertRejects(() => client.getRun("r-missing"));
    assertEquals((missing as ApiError).status, 404);
  } finally {
    await server.close();
  }
});

Deno.test("GpuctlClient describes answers that are not gpuctl JSON", async () => {
  const fake: typeof fetch = () =>
    Promise.resolve(new Response("<html>Bad Gateway</html>", { status: 502 }));
  const client = new GpuctlClient({ serverUrl: "http://proxy", token: "t", fetch: fake });
  const err = await assertRejects(() => client.getRun("r-1"));
  assertEquals(
    err.message,
    "GET /api/runs/r-1 failed with HTTP 502: <html>Bad Gateway</html>",
  );
});

Deno.test("GpuctlClient says which server it could not reach", async () => {
  const url = `http://127.0.0.1:${closedPort()}`;
  const client = new GpuctlClient({ serverUrl: url, token: "t" });
  const err = await assertRejects(() => client.getRun("r-1"));
  assertStringIncludes(err.message, `Cannot reach the gpuctl server at ${url}: `);
});
