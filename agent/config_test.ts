import { assertEquals, assertStringIncludes, assertThrows } from "../tests/assert.ts";
import {
  type ConfigSurroundings,
  loadAgentConfig,
  parseAgentYaml,
  resolveAgentConfig,
  serverUrls,
} from "./config.ts";

const around = { hostname: "gpu-host-1" };

Deno.test("resolveAgentConfig() fills defaults from the home folder and the hostname", () => {
  const config = resolveAgentConfig({}, { server: "http://srv:8600/", token: "t" }, around, "/h");
  assertEquals(config, {
    home: "/h",
    configPath: "/h/agent.yaml",
    serverUrl: "http://srv:8600",
    wsUrl: "ws://srv:8600/api/agent/ws",
    token: "t",
    tokenSource: "--token",
    jobUser: null,
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
    dockerRunArgs: [],
    fenceAfterS: 60,
    runner: "process",
    slurm: null,
    ingest: null,
  });
});

Deno.test("resolveAgentConfig() passes docker_run_args through, one argv item each", () => {
  const file = parseAgentYaml(`docker_run_args: ["--shm-size", "16g", "-v", "/data:/data:ro"]\n`);
  const config = resolveAgentConfig(file, { server: "http://srv:8600", token: "t" }, around, "/h");
  assertEquals(config.dockerRunArgs, ["--shm-size", "16g", "-v", "/data:/data:ro"]);
});

Deno.test("resolveAgentConfig() reads runner slurm with its partition, sbatch settings and ingest address", () => {
  const flags = { server: "http://srv:8600", token: "t" };
  const file = parseAgentYaml(`
runner: slurm
slurm:
  partition: gpu
  account: lab
  time_limit: "04:00:00"
  extra_args: ["--mem=64G"]
  max_gpus: 8
ingest_host: 10.0.0.5
`);
  const config = resolveAgentConfig(file, flags, around, "/h");
  assertEquals(config.runner, "slurm");
  assertEquals(config.slurm, {
    partition: "gpu",
    account: "lab",
    qos: null,
    time_limit: "04:00:00",
    extra_args: ["--mem=64G"],
    max_gpus: 8,
    pollMs: 2000,
  });
  assertEquals(config.ingest, { host: "10.0.0.5", port: 8601 });
  // --runner slurm on the command line, the ingest address defaulting to the hostname.
  const byFlag = resolveAgentConfig(
    parseAgentYaml("slurm: {partition: debug}\n"),
    { ...flags, runner: "slurm" },
    around,
    "/h",
  );
  assertEquals([byFlag.runner, byFlag.ingest], ["slurm", { host: "gpu-host-1", port: 8601 }]);
});

Deno.test("Slurm settings that cannot work are refused, naming the field", () => {
  const flags = { server: "http://srv:8600", token: "t" };
  const resolve = (yaml: string) => () =>
    resolveAgentConfig(parseAgentYaml(yaml), flags, around, "/h");
  assertThrows(resolve("runner: slurm\n"), "Missing slurm.partition");
  assertThrows(resolve("slurm: {partition: gpu}\n"), "Invalid slurm in /h/agent.yaml");
  assertThrows(resolve("ingest_host: 10.0.0.5\n"), "Invalid ingest_host");
  assertThrows(
    () => parseAgentYaml("runner: slurm\nslurm: {partition: 'a b'}\n"),
    "slurm.partition",
  );
  assertThrows(
    () => parseAgentYaml("runner: slurm\nslurm: {partition: gpu, time_limit: 'soon'}\n"),
    "slurm.time_limit",
  );
  assertThrows(() => parseAgentYaml("runner: kubernetes\n"), "runner");
});

Deno.test("resolveAgentConfig() takes fence_after_s from agent.yaml or the flag; 0 means no fence", () => {
  const flags = { server: "http://srv:8600", token: "t" };
  const file = parseAgentYaml("fence_after_s: 30\n");
  assertEquals(resolveAgentConfig(file, flags, around, "/h").fenceAfterS, 30);
  assertEquals(
    resolveAgentConfig(file, { ...flags, "fence-after-s": "0" }, around, "/h").fenceAfterS,
    null,
  );
  assertThrows(() => parseAgentYaml("fence_after_s: -1\n"), "fence_after_s");
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

Deno.test("the agent token comes from --token, --token-file, GPUCTL_AGENT_TOKEN or agent.yaml, in that order", async () => {
  const home = await Deno.makeTempDir();
  try {
    const server = { server: "http://s:1" };
    await Deno.writeTextFile(`${home}/token`, "from-file\n");
    await Deno.writeTextFile(`${home}/agent.yaml`, "token: from-yaml\n");
    const env = { ...around, agentToken: "from-env" };
    const pick = async (flags: Record<string, string>, surroundings: ConfigSurroundings = env) => {
      const c = await loadAgentConfig(home, { ...server, ...flags }, surroundings);
      return [c.token, c.tokenSource];
    };
    assertEquals(await pick({ token: "from-flag" }), ["from-flag", "--token"]);
    assertEquals(await pick({ "token-file": `${home}/token` }), ["from-file", "--token-file"]);
    assertEquals(await pick({}), ["from-env", "GPUCTL_AGENT_TOKEN"]);
    assertEquals(await pick({}, around), ["from-yaml", "agent.yaml"]);
    const missing = await loadAgentConfig(home, { ...server, "token-file": `${home}/nope` }, env)
      .catch((e) => e as Error);
    assertStringIncludes(String(missing), `Invalid --token-file "${home}/nope"`);
    await Deno.writeTextFile(`${home}/token`, "\n");
    const empty = await loadAgentConfig(home, { ...server, "token-file": `${home}/token` }, env)
      .catch((e) => e as Error);
    assertStringIncludes(String(empty), "must hold the agent token");
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("job_user: a user the agent can become is kept; an unknown one or one it cannot become stops the start", () => {
  const trainer = {
    name: "trainer",
    uid: 1001,
    gid: 1001,
    home: "/home/trainer",
    shell: "/bin/sh",
  };
  const users = (name: string) => name === "trainer" ? trainer : null;
  const flags = { server: "http://s", token: "t" };
  const file = parseAgentYaml("job_user: trainer");
  const asRoot = resolveAgentConfig(file, flags, { ...around, lookupUser: users, uid: 0 }, "/h");
  assertEquals(asRoot.jobUser, trainer);
  const asItself = resolveAgentConfig(
    file,
    flags,
    { ...around, lookupUser: users, uid: 1001 },
    "/h",
  );
  assertEquals(asItself.jobUser, null, "no switch when the agent already is that user");
  assertThrows(
    () =>
      resolveAgentConfig(
        parseAgentYaml("job_user: ghost"),
        flags,
        { ...around, lookupUser: users, uid: 0 },
        "/h",
      ),
    'Invalid job_user "ghost" in /h/agent.yaml: there is no such user on this host',
  );
  assertThrows(
    () => resolveAgentConfig(file, flags, { ...around, lookupUser: users, uid: 1000 }, "/h"),
    'Invalid job_user "trainer" in /h/agent.yaml: the agent runs as uid 1000',
  );
});
