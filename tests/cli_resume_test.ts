/**
 * The CLI's long-running commands across a server restart (SIGKILL, then a new server on the
 * same port and database): `gpuctl logs -f` prints every line of a running job exactly once,
 * and `gpuctl event-hook` runs its command exactly once per event, failing commands included.
 */
import { assert, assertEquals } from "./assert.ts";
import { installGpuctl } from "./_gpuctl.ts";
import { startCluster, startServerProcess, until } from "./_processes.ts";

const LINES = 60;

Deno.test("logs -f and event-hook go on across a server restart, missing and repeating nothing", async () => {
  const c = await startCluster({ fakeGpus: 1, prefix: "gpuctl-cli-resume-" });
  const cliHome = `${c.home}/cli-home`;
  await Deno.mkdir(cliHome);
  const gpuctl = await installGpuctl({
    GPUCTL_HOME: cliHome,
    GPUCTL_SERVER_URL: c.server.url,
    GPUCTL_TOKEN: c.server.adminToken,
  });
  const seen = `${c.home}/hook-events.jsonl`;
  const hook = gpuctl.spawn([
    "event-hook",
    "--type",
    "JOB_QUEUED",
    "--type",
    "RUN_SUCCEEDED",
    "--",
    "sh",
    "-c",
    // The event on stdin, the environment beside it, and a failure every time.
    `cat >> ${seen}; echo "$GPUCTL_EVENT_TYPE $GPUCTL_EVENT_JOB_ID" >> ${seen}.env; exit 1`,
  ]);
  const logs: { kill(): Promise<Deno.CommandStatus> }[] = [hook];
  try {
    await hook.waitFor(/running sh for each event after \d+/);
    const submit = await gpuctl.run([
      "job",
      "submit",
      "-n",
      "slow",
      "-g",
      "1",
      "--",
      "sh",
      "-c",
      `for i in $(seq 1 ${LINES}); do echo line-$i; sleep 0.1; done`,
    ]);
    assertEquals(submit.code, 0, submit.stderr);
    const job1 = submit.stdout.trim();
    const follow = gpuctl.spawn(["logs", "-f", job1]);
    logs.push(follow);
    await follow.waitFor(/^line-5$/m);
    await hook.waitFor(/sh exited 1 for event \d+ \(JOB_QUEUED\); going on/);

    await c.server.proc.kill("SIGKILL");
    await follow.waitFor(/lost the stream/);
    const restarted = await startServerProcess(`${c.home}/server`, c.server.port);
    c.server.proc = restarted.proc;

    const status = await Promise.race([
      follow.child.status,
      new Promise<null>((r) => setTimeout(() => r(null), 60_000)),
    ]);
    assert(status !== null, `logs -f did not end:\n${follow.output()}`);
    assertEquals(status.code, 0, follow.output());
    const printed = follow.output().split("\n").filter((l) => /^line-\d+$/.test(l));
    assertEquals(printed, Array.from({ length: LINES }, (_, i) => `line-${i + 1}`));
    assert(/reconnected/.test(follow.output()), follow.output());

    const job2 = (await gpuctl.run(["job", "submit", "-g", "1", "--", "true"])).stdout.trim();
    const want = [
      `JOB_QUEUED ${job1}`,
      `RUN_SUCCEEDED ${job1}`,
      `JOB_QUEUED ${job2}`,
      `RUN_SUCCEEDED ${job2}`,
    ];
    const envLines = async () => {
      try {
        return (await Deno.readTextFile(`${seen}.env`)).trim().split("\n");
      } catch {
        return [];
      }
    };
    await until(async () => (await envLines()).length >= want.length, 30_000, "four hook runs");
    // The job's own order is fixed; the two jobs' events may interleave only as the server saw them.
    assertEquals((await envLines()).sort(), [...want].sort());
    const events = (await Deno.readTextFile(seen)).trim().split("\n").map((l) => JSON.parse(l));
    const ids = events.map((e) => e.id);
    assertEquals(new Set(ids).size, want.length, `an event ran twice: ${ids}`);
    assertEquals(ids, [...ids].sort((a, b) => a - b));
    const reported = hook.output().match(/sh exited 1 for event \d+/g) ?? [];
    assertEquals(reported.length, want.length, hook.output());
    assert(/lost the event stream/.test(hook.output()), hook.output());
  } finally {
    for (const p of logs) await p.kill();
    await gpuctl.remove();
    await c.stop();
  }
});
