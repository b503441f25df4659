import { join } from "node:path";
import { assertEquals, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import { gpuctlHome, isLoopback, pidAlive, resolveConnection } from "./config.ts";
import { tempHome } from "./_test_server.ts";

const CLI_YAML = "server_url: http://cli-yaml:9000/\ntoken: tok-cli\n";
const SERVER_YAML = "port: 8700\nadmin_token: tok-admin\nagent_token: tok-agent\n";

// server.json of a process that runs (this one) and of one that has exited.
const LIVE_SERVER_JSON = JSON.stringify({
  url: "http://127.0.0.1:43210",
  pid: Deno.pid,
  started_at: "2026-01-01T00:00:00.000Z",
});
// Above the highest pid Linux (PID_MAX_LIMIT, 2^22) and macOS allow: never a running process.
const DEAD_PID = 2 ** 22 + 1;
const STALE_SERVER_JSON = JSON.stringify({
  url: "http://127.0.0.1:43210",
  pid: DEAD_PID,
  started_at: "2026-01-01T00:00:00.000Z",
});

interface Case {
  name: string;
  files?: { "cli.yaml"?: string; "server.yaml"?: string; "server.json"?: string };
  flags?: { server?: string; token?: string };
  env?: Record<string, string>;
  expected: { serverUrl: string; token: string; serverFrom: string; tokenFrom: string };
}

const CASES: Case[] = [
  {
    name: "flags win over everything",
    files: { "cli.yaml": CLI_YAML, "server.yaml": SERVER_YAML },
    flags: { server: "http://flag:1", token: "tok-flag" },
    env: { GPUCTL_SERVER_URL: "http://env:2", GPUCTL_TOKEN: "tok-env" },
    expected: {
      serverUrl: "http://flag:1",
      token: "tok-flag",
      serverFrom: "--server",
      tokenFrom: "--token",
    },
  },
  {
    name: "the environment wins over the files",
    files: { "cli.yaml": CLI_YAML, "server.yaml": SERVER_YAML },
    env: { GPUCTL_SERVER_URL: "http://env:2/", GPUCTL_TOKEN: "tok-env" },
    expected: {
      serverUrl: "http://env:2",
      token: "tok-env",
      serverFrom: "GPUCTL_SERVER_URL",
      tokenFrom: "GPUCTL_TOKEN",
    },
  },
  {
    name: "cli.yaml wins over server.yaml",
    files: { "cli.yaml": CLI_YAML, "server.yaml": SERVER_YAML },
    expected: {
      serverUrl: "http://cli-yaml:9000",
      token: "tok-cli",
      serverFrom: "<home>/cli.yaml",
      tokenFrom: "<home>/cli.yaml",
    },
  },
  {
    name: "server.yaml gives the loopback URL on its port and the admin token",
    files: { "server.yaml": SERVER_YAML },
    expected: {
      serverUrl: "http://127.0.0.1:8700",
      token: "tok-admin",
      serverFrom: "<home>/server.yaml",
      tokenFrom: "<home>/server.yaml",
    },
  },
  {
    name: "server.yaml without a port means 8600",
    files: { "server.yaml": "admin_token: tok-admin\n" },
    expected: {
      serverUrl: "http://127.0.0.1:8600",
      token: "tok-admin",
      serverFrom: "<home>/server.yaml",
      tokenFrom: "<home>/server.yaml",
    },
  },
  {
    name: "GPUCTL_PORT moves the local server as it moves the server itself",
    files: { "server.yaml": SERVER_YAML },
    env: { GPUCTL_PORT: "8800" },
    expected: {
      serverUrl: "http://127.0.0.1:8800",
      token: "tok-admin",
      serverFrom: "<home>/server.yaml",
      tokenFrom: "<home>/server.yaml",
    },
  },
  {
    name: "each of the two is taken from the first place that has it",
    files: { "cli.yaml": "token: tok-cli\n", "server.yaml": SERVER_YAML },
    flags: { server: "http://flag:1" },
    expected: {
      serverUrl: "http://flag:1",
      token: "tok-cli",
      serverFrom: "--server",
      tokenFrom: "<home>/cli.yaml",
    },
  },
  {
    name: "server.json of a running server wins over server.yaml, the token is server.yaml's",
    files: { "server.yaml": SERVER_YAML, "server.json": LIVE_SERVER_JSON },
    expected: {
      serverUrl: "http://127.0.0.1:43210",
      token: "tok-admin",
      serverFrom: "<home>/server.json",
      tokenFrom: "<home>/server.yaml",
    },
  },
  {
    name: "a stale server.json (its process is gone) is passed over for server.yaml",
    files: { "server.yaml": SERVER_YAML, "server.json": STALE_SERVER_JSON },
    expected: {
      serverUrl: "http://127.0.0.1:8700",
      token: "tok-admin",
      serverFrom: "<home>/server.yaml",
      tokenFrom: "<home>/server.yaml",
    },
  },
  {
    name: "a server.json that is not one the server wrote is passed over",
    files: { "server.yaml": SERVER_YAML, "server.json": '{"url": "http://127.0.0.1:1"' },
    expected: {
      serverUrl: "http://127.0.0.1:8700",
      token: "tok-admin",
      serverFrom: "<home>/server.yaml",
      tokenFrom: "<home>/server.yaml",
    },
  },
  {
    name: "cli.yaml wins over server.json",
    files: { "cli.yaml": CLI_YAML, "server.json": LIVE_SERVER_JSON },
    expected: {
      serverUrl: "http://cli-yaml:9000",
      token: "tok-cli",
      serverFrom: "<home>/cli.yaml",
      tokenFrom: "<home>/cli.yaml",
    },
  },
  {
    name: "the local admin token goes with a loopback URL from elsewhere",
    files: { "server.yaml": SERVER_YAML },
    env: { GPUCTL_SERVER_URL: "http://localhost:8700" },
    expected: {
      serverUrl: "http://localhost:8700",
      token: "tok-admin",
      serverFrom: "GPUCTL_SERVER_URL",
      tokenFrom: "<home>/server.yaml",
    },
  },
];

for (const c of CASES) {
  Deno.test(`resolveConnection(): ${c.name}`, async () => {
    const { home, cleanup } = await tempHome();
    try {
      for (const [name, text] of Object.entries(c.files ?? {})) {
        await Deno.writeTextFile(join(home, name), text);
      }
      const { tried: _, ...got } = await resolveConnection(c.flags ?? {}, {
        GPUCTL_HOME: home,
        ...c.env,
      });
      const fix = (s: string) => s.replace("<home>", home);
      assertEquals(got, {
        ...c.expected,
        serverFrom: fix(c.expected.serverFrom),
        tokenFrom: fix(c.expected.tokenFrom),
      });
    } finally {
      await cleanup();
    }
  });
}

Deno.test("resolveConnection() lists each place it looked at, with why a stale server.json was passed over", async () => {
  const { home, cleanup } = await tempHome();
  try {
    await Deno.writeTextFile(join(home, "server.yaml"), SERVER_YAML);
    await Deno.writeTextFile(join(home, "server.json"), STALE_SERVER_JSON);
    const got = await resolveConnection({}, { GPUCTL_HOME: home });
    assertEquals(got.tried, [
      "--server: not given",
      "GPUCTL_SERVER_URL: not set",
      `${home}/cli.yaml: no server_url`,
      `${home}/server.json: stale (its server, process ${DEAD_PID}, is not running)`,
      `${home}/server.yaml: http://127.0.0.1:8700`,
    ]);
  } finally {
    await cleanup();
  }
});

Deno.test("pidAlive() tells a running process from one that is gone", () => {
  assertEquals(pidAlive(Deno.pid), true);
  assertEquals(pidAlive(DEAD_PID), false);
});

Deno.test("resolveConnection() never sends the local admin token to another host", async () => {
  const { home, cleanup } = await tempHome();
  try {
    await Deno.writeTextFile(join(home, "server.yaml"), SERVER_YAML);
    const err = await assertRejects(() =>
      resolveConnection({ server: "http://gpu-box:8600" }, { GPUCTL_HOME: home })
    );
    assertStringIncludes(err.message, "No token for the gpuctl server http://gpu-box:8600");
    assertStringIncludes(err.message, "GPUCTL_TOKEN");
  } finally {
    await cleanup();
  }
});

Deno.test("resolveConnection() with nothing configured says what to set", async () => {
  const { home, cleanup } = await tempHome();
  try {
    const err = await assertRejects(() => resolveConnection({}, { GPUCTL_HOME: home }));
    assertStringIncludes(err.message, "No gpuctl server configured");
    assertStringIncludes(err.message, "--server");
    assertStringIncludes(err.message, "GPUCTL_SERVER_URL");
    assertStringIncludes(err.message, join(home, "cli.yaml"));
  } finally {
    await cleanup();
  }
});

Deno.test("resolveConnection() does not read files that flags and environment make moot", async () => {
  const { home, cleanup } = await tempHome();
  try {
    await Deno.writeTextFile(join(home, "cli.yaml"), "server_url: [not, text\n");
    const got = await resolveConnection({}, {
      GPUCTL_HOME: home,
      GPUCTL_SERVER_URL: "http://env:2",
      GPUCTL_TOKEN: "t",
    });
    assertEquals(got.serverUrl, "http://env:2");
  } finally {
    await cleanup();
  }
});

Deno.test("resolveConnection() names the file and field of a bad cli.yaml", async () => {
  const { home, cleanup } = await tempHome();
  try {
    await Deno.writeTextFile(join(home, "cli.yaml"), "server: http://x\n");
    const err = await assertRejects(() => resolveConnection({}, { GPUCTL_HOME: home }));
    assertStringIncludes(err.message, join(home, "cli.yaml"));
    assertStringIncludes(err.message, "server");
  } finally {
    await cleanup();
  }
});

Deno.test("resolveConnection() refuses a server URL that is not http(s)", async () => {
  const err = await assertRejects(() =>
    resolveConnection({ server: "gpu-box:8600", token: "t" }, { HOME: "/nonexistent" })
  );
  assertStringIncludes(err.message, 'Invalid gpuctl server URL "gpu-box:8600" (from --server)');
});

Deno.test("gpuctlHome() is GPUCTL_HOME, else ~/.gpuctl", () => {
  assertEquals(gpuctlHome({ GPUCTL_HOME: "/h", HOME: "/home/me" }), "/h");
  assertEquals(gpuctlHome({ HOME: "/home/me" }), "/home/me/.gpuctl");
});

Deno.test("isLoopback() knows this machine's addresses", () => {
  assertEquals(
    ["http://127.0.0.1:1", "http://localhost", "http://[::1]:8600", "http://10.0.0.1"].map(
      isLoopback,
    ),
    [true, true, true, false],
  );
});
