import { assertEquals, assertStringIncludes, assertThrows } from "../tests/assert.ts";
import { loadAgentConfig, parseAgentYaml, resolveAgentConfig, serverUrls } from "./config.ts";

const around = { hostname: "gpu-host-1" };

Deno.test("resolveAgentConfig() fills defaults from the home folder and the hostname", () => {
  const config = resolveAgentConfig({}, { server: "http://srv:8600/", token: "t" }, around, "/h");
  assertEquals(config, {
    home: "/h",
    configPath: "/h/agent.yaml",
    serverUrl: "http://srv:8600",
    wsUrl: "ws://srv:8600/api/agent/ws",
    token: "t",
    nodeId: "gpu-host-1",
    hostname: "gpu-host-1",
    dataDir: "/h/agent",
    cpuSlots: 2,
    labels: {},
    avoidForeignGpus: false,
    heartbeatMs: 10_000,
    sampleMs: 10_000,
    spoolMaxBytes: 512 * 1024 * 1024,
    nvmlLibrary: null,
    fakeGpus: null,
    pythonPath: null,
  });
});

Deno.test("resolveAgentConfig() lets flags win over agent.yaml, and the env set the NVML path", () => {
  const file = parseAgentYaml(`
server_url: https://old:1
token: from-file
node_id: from-file
cpu_slots: 4
labels: {rack: a}
avoid_foreign_gpus: true
heartbeat_s: 5
spool_max_mb: 1
nvml_library: /opt/libnvidia-ml.so.1
`);
  const config = resolveAgentConfig(
    file,
    {
      server: "https://new:2",
      "node-id": "n2",
      "fake-gpus": "2",
      "data-dir": "/d",
      "heartbeat-s": "0.5",
      "sample-s": "1",
    },
    { ...around, nvmlLibrary: "/env/libnvml.so", pythonPath: "/py" },
    "/h",
  );
  assertEquals(
    [config.serverUrl, config.wsUrl, config.token, config.nodeId, config.dataDir],
    ["https://new:2", "wss://new:2/api/agent/ws", "from-file", "n2", "/d"],
  );
  assertEquals([config.fakeGpus, config.heartbeatMs, config.sampleMs], [2, 500, 1000]);
  assertEquals([config.cpuSlots, config.labels, config.avoidForeignGpus], [4, { rack: "a" }, true]);
  assertEquals([config.spoolMaxBytes, config.nvmlLibrary, config.pythonPath], [
    1024 * 1024,
    "/env/libnvml.so",
    "/py",
  ]);
});

Deno.test("config errors name the field", () => {
  assertThrows(() => resolveAgentConfig({}, { token: "t" }, around, "/h"), "Missing server_url");
  assertThrows(() => resolveAgentConfig({}, { server: "http://s" }, around, "/h"), "Missing token");
  assertThrows(
    () =>
      resolveAgentConfig({}, { server: "http://s", token: "t", "fake-gpus": "two" }, around, "/h"),
    "--fake-gpus",
  );
  assertThrows(() => parseAgentYaml("cpu_slots: -1"), "cpu_slots");
  assertThrows(() => parseAgentYaml("heartbeat_s: fast"), "heartbeat_s");
  assertThrows(() => parseAgentYaml("sever_url: http://x"), "sever_url");
  assertThrows(() => parseAgentYaml("a: [b"), "Cannot parse");
  assertThrows(() => serverUrls("ftp://x"), "scheme");
  assertThrows(() => serverUrls("not a url"), "Invalid server_url");
});

Deno.test("loadAgentConfig() reads agent.yaml from the home folder, and works without one", async () => {
  const home = await Deno.makeTempDir();
  try {
    const bare = await loadAgentConfig(home, { server: "ws://s:1", token: "t" }, around);
    assertEquals(bare.serverUrl, "http://s:1");
    await Deno.writeTextFile(`${home}/agent.yaml`, "server_url: http://s:9\ntoken: abc\n");
    const config = await loadAgentConfig(home, {}, around);
    assertEquals([config.serverUrl, config.token, config.dataDir], [
      "http://s:9",
      "abc",
      `${home}/agent`,
    ]);
    await Deno.writeTextFile(`${home}/agent.yaml`, "token: 5\n");
    const err = await loadAgentConfig(home, {}, around).catch((e) => e as Error);
    assertStringIncludes(String(err), "token");
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
