// `agent.ts` as a user runs it: a subprocess with exactly the documented permissions.
import { assert, assertEquals } from "../tests/assert.ts";
import { eventually, FakeServer } from "./_fake_server.ts";
import { dispatchSpec } from "./_testing.ts";
import { AGENT_PERMISSIONS } from "./permissions.ts";

const AGENT_TS = new URL("../agent.ts", import.meta.url).pathname;
const AGENT_TOKEN = "gpc_agentid_AGENTSECRET0123456789abcd";

/** Runs agent.ts with `args` and `env` until `until` holds (or it exits); its stderr. */
async function runAgent(
  args: string[],
  env: Record<string, string>,
  until: () => boolean,
): Promise<{ code: number; stderr: string }> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...AGENT_PERMISSIONS, AGENT_TS, ...args],
    env,
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    return s;
  });
  try {
    await eventually("the agent", () => exited || until(), 20_000);
  } finally {
    if (!exited) child.kill("SIGTERM");
  }
  return { code: (await status).code, stderr: await stderr };
}

Deno.test("agent.ts runs a job under its documented permissions and stops on SIGTERM", async () => {
  const server = FakeServer.start();
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-agent-main-" });
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...AGENT_PERMISSIONS,
      AGENT_TS,
      "--server",
      server.url,
      "--fake-gpus",
      "2",
      "--data-dir",
      `${dir}/data`,
      "--heartbeat-s",
      "0.2",
      "--sample-s",
      "0.2",
    ],
    env: { GPUCTL_HOME: `${dir}/home`, GPUCTL_AGENT_TOKEN: AGENT_TOKEN },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const output = Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  let stopped = false;
  try {
    await eventually("hello", () => server.hellos.length === 1 && server.connected, 20_000);
    assertEquals(server.hellos[0].gpus.length, 2);
    assertEquals(server.authorizations[0], `Bearer ${AGENT_TOKEN}`, "the token from the env");
    await eventually(
      "a heartbeat with host readings",
      () => server.heartbeats.some((h) => h.cpu_pct !== null && h.mem_used_mb !== null),
    );
    server.send({
      type: "dispatch",
      job: dispatchSpec({
        job_id: "main",
        attempt: 1,
        run_id: "r-main",
        working_dir: dir,
        command: ["python3", "-c", "print(1); print(2)"],
      }),
    });
    await eventually(
      "the job's end",
      () => server.of("job_state", "r-main").some((f) => f.state !== "RUNNING"),
    );
    const end = server.of("job_state", "r-main").at(-1)!;
    assertEquals([end.state, end.exit_code], ["EXITED", 0], `the job ended: ${end.reason}`);
    assertEquals(server.of("logs", "r-main").flatMap((f) => f.lines.map((l) => l.text)), [
      "1",
      "2",
    ]);
    child.kill("SIGTERM");
    const status = await child.status;
    stopped = true;
    assertEquals(status.code, 0);
    const [, stderr] = await output;
    assert(!stderr.includes("NotCapable"), stderr);
    assert(stderr.includes("agent stopped"), stderr);
    assert(!stderr.includes(AGENT_TOKEN), "the agent never prints its token");
    assert(!stderr.includes("--token"), "no warning about a token flag that was not used");
  } catch (err) {
    if (!stopped) {
      try {
        child.kill("SIGKILL");
      } catch {
        // It already exited.
      }
      await child.status;
    }
    const [, stderr] = await output;
    throw new Error(`${(err as Error).message}\n--- agent stderr ---\n${stderr.slice(-4000)}`, {
      cause: err,
    });
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("deno task agent runs with exactly the documented permissions", () => {
  const tasks = JSON.parse(Deno.readTextFileSync(new URL("../deno.json", import.meta.url))).tasks;
  assertEquals(tasks.agent, `deno run ${AGENT_PERMISSIONS.join(" ")} agent.ts`);
});

Deno.test("agent.ts warns that --token shows in ps, and never prints the token itself", async () => {
  const server = FakeServer.start();
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-agent-main-" });
  try {
    const { code, stderr } = await runAgent(
      ["--server", server.url, "--token", AGENT_TOKEN, "--fake-gpus", "0", "--data-dir", dir],
      { GPUCTL_HOME: dir },
      () => server.hellos.length > 0,
    );
    assertEquals(code, 0, stderr);
    assert(stderr.includes("--token, where every user of this host can read it"), stderr);
    assert(!stderr.includes(AGENT_TOKEN), stderr);
  } finally {
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("agent.ts refuses to start with a job_user that does not exist, naming the field", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-agent-main-" });
  try {
    await Deno.writeTextFile(`${dir}/agent.yaml`, "job_user: no-such-user-gpuctl\n");
    const { code, stderr } = await runAgent(
      ["--server", "http://127.0.0.1:9", "--fake-gpus", "0"],
      { GPUCTL_HOME: dir, GPUCTL_AGENT_TOKEN: AGENT_TOKEN },
      () => false,
    );
    assertEquals(code, 2, stderr);
    assert(stderr.includes('Invalid job_user "no-such-user-gpuctl"'), stderr);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
