/**
 * The real entry point, as a user runs it: `deno task server` with an empty GPUCTL_HOME
 * creates the config with tokens, prints the admin token once, and serves with it.
 */
import { assert, assertEquals, assertFalse, assertStringIncludes } from "./assert.ts";
import { alive, spawnDeno } from "./_processes.ts";
import { closedPort, runSubprocess as cli } from "../cli/_test_server.ts";

const ROOT = new URL("..", import.meta.url).pathname;

const mode = async (path: string) => (await Deno.stat(path)).mode! & 0o777;

interface Started {
  url: string;
  output: () => string;
  stop: () => Promise<void>;
}

async function startServer(
  home: string,
  { firstStart }: { firstStart: boolean },
): Promise<Started> {
  const proc = spawnDeno(["task", "--quiet", "server", "--port", "0"], { GPUCTL_HOME: home });
  // Wait for the whole banner, which ends with the token on first start.
  const banner = firstStart
    ? /console at (http:\/\/[0-9.]+:\d+)\/[\s\S]*Admin token[^\n]*\n\s+gpc_\S+\n/
    : /console at (http:\/\/[0-9.]+:\d+)\//;
  let m: RegExpExecArray;
  try {
    m = await proc.waitFor(banner);
  } catch (err) {
    await proc.kill("SIGKILL");
    throw err;
  }
  return {
    url: m[1],
    output: proc.output,
    async stop() {
      const status = await proc.kill("SIGTERM");
      assertEquals(status.code, 0, `server exit:\n${proc.output()}`);
    },
  };
}

Deno.test("first start creates server.yaml (0600) with tokens, prints the admin token once, and serves with it", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-home-" });
  try {
    const first = await startServer(`${home}/fresh`, { firstStart: true });
    const token = /Admin token[^\n]*\n\s+(gpc_\S+)/.exec(first.output())![1];
    const who = await fetch(`${first.url}/api/auth/whoami`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assertEquals(await who.json(), {
      name: "admin",
      scope: "admin",
      token_id: token.split("_")[1],
      can_write: true,
      budget: null,
    });
    const job = await fetch(`${first.url}/api/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({
        name: "hello",
        command: ["echo", "hi"],
        working_dir: "/tmp",
        gpus: 0,
      }),
    });
    assertEquals(job.status, 201);
    // The configured agent token, deleted through the API, stays deleted after a restart.
    const agentToken = /agent_token: (gpc_\S+)/.exec(
      await Deno.readTextFile(`${home}/fresh/server.yaml`),
    )![1];
    const deleted = await fetch(`${first.url}/api/tokens/${agentToken.split("_")[1]}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${token}` },
    });
    assertEquals(deleted.status, 200, await deleted.text());
    await first.stop();

    const config = await Deno.readTextFile(`${home}/fresh/server.yaml`);
    assertStringIncludes(config, `admin_token: ${token}`);
    assert(/agent_token: gpc_/.test(config));
    assertEquals((await Deno.stat(`${home}/fresh/server.yaml`)).mode! & 0o777, 0o600);

    // The second start keeps the token and the data, and does not print the token again.
    const second = await startServer(`${home}/fresh`, { firstStart: false });
    assertFalse(second.output().includes(token), "the token is printed only on the first start");
    const jobs = await fetch(`${second.url}/api/jobs?status=QUEUED`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assertEquals((await jobs.json()).items.map((j: { name: string }) => j.name), ["hello"]);
    const asAgent = await fetch(`${second.url}/api/agent/ws`, {
      headers: { authorization: `Bearer ${agentToken}` },
    });
    assertEquals(asAgent.status, 401, await asAgent.text());
    assertStringIncludes(second.output(), "agent_token in");
    await second.stop();
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("a broken server.yaml stops the start with a message naming the field", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-home-" });
  try {
    await Deno.writeTextFile(`${home}/server.yaml`, "port: eighty\n");
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "server"],
      cwd: ROOT,
      env: { GPUCTL_HOME: home, NO_COLOR: "1" },
    }).output();
    assertEquals(out.code, 1);
    assertStringIncludes(new TextDecoder().decode(out.stderr), 'server.yaml": port:');
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("files are private: a loose GPUCTL_HOME is tightened with a log line, the database, config and backups are 0600", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-home-" });
  try {
    await Deno.chmod(home, 0o755);
    const server = await startServer(home, { firstStart: true });
    assertStringIncludes(server.output(), `made a folder private path=${home} mode=0755`);
    assertEquals(await mode(home), 0o700);
    for (
      const name of ["server.yaml", "server.json", "gpuctl.db", "gpuctl.db-wal", "gpuctl.db-shm"]
    ) {
      assertEquals(await mode(`${home}/${name}`), 0o600, name);
    }
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["task", "--quiet", "backup"],
      cwd: ROOT,
      env: { GPUCTL_HOME: home, NO_COLOR: "1" },
    }).output();
    await server.stop();
    assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
    const path = new TextDecoder().decode(out.stdout).trim();
    assert(path.startsWith(`${home}/backups/gpuctl-`) && path.endsWith(".db"), path);
    assert((await Deno.stat(path)).size > 0);
    assertEquals(await mode(path), 0o600);
    assertEquals(await mode(`${home}/backups`), 0o700);
    // One self-contained file: no empty -wal/-shm beside it.
    assertEquals([...Deno.readDirSync(`${home}/backups`)].map((e) => e.name), [
      path.slice(`${home}/backups/`.length),
    ]);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("deno task start runs the server and a local agent: a CPU job runs end to end and shows its log", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-home-" });
  const proc = spawnDeno(["task", "--quiet", "start", "--port", "0", "--fake-gpus", "2"], {
    GPUCTL_HOME: home,
  });
  try {
    const deadline = Date.now() + 30_000;
    const m = await proc.waitFor(
      /console at (http:\/\/[0-9.]+:\d+)\/[\s\S]*Admin token[^\n]*\n\s+(gpc_\S+)/,
    );
    const [, url, token] = m;
    const call = async (method: string, path: string, body?: unknown) =>
      await (await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: body ? JSON.stringify(body) : undefined,
      })).json();
    let node;
    while (!(node = (await call("GET", "/api/nodes")).items[0])) {
      if (Date.now() > deadline) throw new Error(`no local agent:\n${proc.output()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    assertEquals([node.status, node.gpus.length, node.fake_gpus], ["ONLINE", 2, true]);
    const job = await call("POST", "/api/jobs", {
      name: "hello",
      command: ["echo", "hello from gpuctl"],
      working_dir: home,
      gpus: 0,
    });
    let done;
    while ((done = await call("GET", `/api/jobs/${job.id}`)).status !== "SUCCEEDED") {
      if (Date.now() > deadline + 30_000) {
        throw new Error(`job: ${JSON.stringify(done)}\n${proc.output()}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const logs = await call("GET", `/api/runs/${done.run_id}/logs`);
    assertEquals(logs.lines.map((l: { text: string }) => l.text), ["hello from gpuctl"]);

    // A job cannot find the server's tokens: no GPUCTL_HOME or token in its environment,
    // and the local agent's token is on no command line of this host.
    const agentToken = /agent_token: (gpc_\S+)/.exec(
      await Deno.readTextFile(`${home}/server.yaml`),
    )![1];
    const probe = await call("POST", "/api/jobs", {
      name: "probe",
      command: 'cat "${GPUCTL_HOME:-/nonexistent}/server.yaml"; env; echo probe-done',
      working_dir: home,
      gpus: 0,
    });
    let probed;
    while (
      !["SUCCEEDED", "FAILED"].includes(
        (probed = await call("GET", `/api/jobs/${probe.id}`)).status,
      )
    ) {
      if (Date.now() > deadline + 30_000) throw new Error(`probe: ${JSON.stringify(probed)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const seen = (await call("GET", `/api/runs/${probed.run_id}/logs`)).lines
      .map((l: { text: string }) => l.text).join("\n");
    assertStringIncludes(seen, "probe-done");
    for (const secret of [token, agentToken, "GPUCTL_HOME", "GPUCTL_AGENT_TOKEN"]) {
      assertFalse(seen.includes(secret), `the job saw ${secret}:\n${seen}`);
    }
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      const cmdline = await Deno.readTextFile(`/proc/${entry.name}/cmdline`).catch(() => "");
      assertFalse(cmdline.includes(agentToken), `pid ${entry.name} has the agent token in argv`);
    }
  } finally {
    const status = await proc.kill("SIGTERM");
    assertEquals(status.code, 0, proc.output());
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("the CLI finds a server started on any port through server.json, which a clean exit removes", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-home-" });
  try {
    const server = await startServer(home, { firstStart: true });
    const json = JSON.parse(await Deno.readTextFile(`${home}/server.json`));
    assertEquals(json.url, server.url);
    assert(alive(json.pid), `server.json names a running process: ${json.pid}`);
    assert(!Number.isNaN(Date.parse(json.started_at)), json.started_at);
    assertEquals(await mode(`${home}/server.json`), 0o600);

    // A spool file for `gpuctl sync` to send: the CLI needs the server to do it.
    await Deno.mkdir(`${home}/spool`);
    const runId = "r-serverjson01";
    await Deno.writeTextFile(
      `${home}/spool/${runId}.jsonl`,
      [
        { type: "run", id: runId, project: "found" },
        { type: "log", points: [{ key: "loss", step: 0, value: 1 }], status: "SUCCEEDED" },
      ].map((l) => JSON.stringify(l) + "\n").join(""),
    );
    const synced = await cli(["sync", "--force"], { GPUCTL_HOME: home });
    assertEquals(synced.code, 0, synced.stderr);
    assertStringIncludes(synced.stdout, `Synced 1 of 1 spool file to ${server.url}`);

    await server.stop();
    let gone = false;
    await Deno.stat(`${home}/server.json`).catch(() => gone = true);
    assert(gone, "a clean exit removes server.json");
    assertFalse(alive(json.pid));

    // A crash leaves server.json behind: the CLI passes over it, and says so when the
    // next place it tried does not answer either.
    await Deno.writeTextFile(`${home}/server.json`, JSON.stringify(json));
    await Deno.writeTextFile(`${home}/spool/${runId}.jsonl`, '{"type":"run","id":"r-x"}\n');
    const port = closedPort();
    const failed = await cli(["sync", "--force"], { GPUCTL_HOME: home, GPUCTL_PORT: String(port) });
    assertEquals(failed.code, 1, failed.stdout);
    // sync reports each file's failure on stdout and goes on with the others.
    const said = failed.stdout + failed.stderr;
    assertStringIncludes(
      said,
      `Cannot reach the gpuctl server at http://127.0.0.1:${port}`,
    );
    assertStringIncludes(
      said,
      `server.json: stale (its server, process ${json.pid}, is not running)`,
    );
    assertStringIncludes(said, `server.yaml: http://127.0.0.1:${port}`);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
