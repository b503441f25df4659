// `agent.ts` as a user runs it: a subprocess with exactly the documented permissions.
import { assert, assertEquals } from "../tests/assert.ts";
import { eventually, FakeServer } from "./_fake_server.ts";
import { dispatchSpec } from "./_testing.ts";
import { AGENT_PERMISSIONS } from "./permissions.ts";

const AGENT_TS = new URL("../agent.ts", import.meta.url).pathname;

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
      "--token",
      "agent-token",
      "--fake-gpus",
      "2",
      "--data-dir",
      `${dir}/data`,
      "--heartbeat-s",
      "0.2",
      "--sample-s",
      "0.2",
    ],
    env: { GPUCTL_HOME: `${dir}/home` },
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
