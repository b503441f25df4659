import { assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import { runInProcess, startTestServer, tempHome } from "../_test_server.ts";

Deno.test("gpuctl token create --agent --node makes an agent token bound to that node", async () => {
  const server = await startTestServer();
  const { home, cleanup } = await tempHome();
  try {
    const env = {
      GPUCTL_HOME: home,
      GPUCTL_SERVER_URL: server.url,
      GPUCTL_TOKEN: server.h.tokens.admin,
    };
    const res = await runInProcess(
      ["token", "create", "--agent", "--node", "gpu-2", "--json"],
      env,
    );
    assertEquals([res.code, res.stderr], [0, ""]);
    const created = JSON.parse(res.stdout);
    assertEquals([created.scope, created.node_id, created.name], ["agent", "gpu-2", "gpu-2 agent"]);
    assertStringIncludes(created.token, "gpc_");
    const listed = (await server.h.call("GET", "/api/tokens")).json.items;
    assertEquals(
      listed.filter((t: { node_id: string | null }) => t.node_id === "gpu-2").length,
      1,
    );

    const person = await runInProcess(["token", "create", "--scope", "read"], env);
    assertEquals(person.code, 0);
    assertStringIncludes(person.stdout, 'Created read token "read"');

    const noNode = await runInProcess(["token", "create", "--agent"], env);
    assertEquals(noNode.code, 2);
    assertStringIncludes(noNode.stderr, "--agent needs --node ID");
    const writeToken = await runInProcess(["token", "create", "--agent", "--node", "x"], {
      ...env,
      GPUCTL_TOKEN: server.h.tokens.write,
    });
    assertEquals(writeToken.code, 1); // only an admin creates tokens
  } finally {
    await cleanup();
    await server.close();
  }
});
