// The agent runs as root and its jobs as `job_user`: these tests play that job user, who owns
// the working dir and may plant links in it while the agent works there. Each starts a real
// agent against a fake server and real jobs run as `nobody` through setpriv.
import { assert, assertEquals } from "../tests/assert.ts";
import type { DataFrame, DispatchSpec } from "../protocol/agent.ts";
import { eventually, FakeServer } from "./_fake_server.ts";
import { dispatchSpec } from "./_testing.ts";
import { resolveAgentConfig } from "./config.ts";
import { memoryLogger } from "./log.ts";
import { type JobUser, lookupUser } from "./runner/job_user.ts";
import { startAgent } from "./start_agent.ts";

/** A Python every user can run (the jobs and the racer run as nobody). */
const PYTHON = "/usr/bin/python3";
const hasPython = (() => {
  try {
    return Deno.statSync(PYTHON).isFile;
  } catch {
    return false;
  }
})();
const nobody: JobUser | null = Deno.uid() === 0 && hasPython ? lookupUser("nobody") : null;
const skip = nobody === null
  ? ` (skipped: needs the tests to run as root, with a user nobody and ${PYTHON})`
  : "";

interface World {
  server: FakeServer;
  /** The agent's log lines. */
  logs: string[];
  /** Root-owned, mode 0755: the job user may enter it but not write it. */
  root: string;
  /** The job user's working dir. */
  wd: string;
  dispatch(spec: Partial<DispatchSpec> & { job_id: string }): void;
}

/** A root agent whose jobs run as nobody in a working dir nobody owns; cleaned up after `fn`. */
async function withJobUserAgent(fn: (world: World) => Promise<void>): Promise<void> {
  const server = FakeServer.start();
  const root = await Deno.makeTempDir({ prefix: "gpuctl-job-user-" });
  await Deno.chmod(root, 0o755);
  const wd = `${root}/wd`;
  await Deno.mkdir(wd);
  await Deno.chown(wd, nobody!.uid, nobody!.gid);
  const log = memoryLogger();
  const config = resolveAgentConfig(
    {},
    {
      server: server.url,
      token: "agent-token",
      "node-id": "node-test",
      "fake-gpus": 1,
      "data-dir": `${root}/data`,
      "heartbeat-s": 0.2,
      "sample-s": 0.2,
    },
    { hostname: "test-host" },
    `${root}/home`,
  );
  config.jobUser = nobody;
  const agent = await startAgent(config, {
    log,
    baseEnv: { PATH: "/usr/bin:/bin", LANG: "C" },
    backoff: () => 100,
    watchPollMs: 200,
  });
  try {
    await eventually("the agent's hello", () => server.hellos.length > 0 && server.connected);
    await fn({
      server,
      logs: log.lines,
      root,
      wd,
      dispatch: (overrides) =>
        server.send({
          type: "dispatch",
          job: dispatchSpec({
            attempt: 1,
            run_id: `r-${overrides.job_id}`,
            working_dir: wd,
            ...overrides,
          }),
        }),
    });
  } finally {
    await agent.stop();
    await server.stop();
    await Deno.remove(root, { recursive: true });
  }
}

function endOf(server: FakeServer, runId: string): (DataFrame & { type: "job_state" }) | null {
  return server.of("job_state", runId).find((f) => f.state !== "RUNNING") ?? null;
}

/** Everything the server was sent, as text. */
function everythingSent(server: FakeServer): string {
  return JSON.stringify([
    server.applied,
    server.ignored,
    server.hellos,
    server.heartbeats,
    server.invalid,
  ]);
}

/** Runs `script` (Python) as nobody, detached from the test's stdio; returns the process. */
function spawnAsNobody(script: string, args: string[]): Deno.ChildProcess {
  return new Deno.Command("setpriv", {
    args: [
      `--reuid=${nobody!.uid}`,
      `--regid=${nobody!.gid}`,
      "--init-groups",
      "--",
      PYTHON,
      "-c",
      script,
      ...args,
    ],
    clearEnv: true,
    env: { PATH: "/usr/bin:/bin" },
    cwd: "/",
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/**
 * The job user's racer: owns `<wd>/.gpuctl-runs`, watches it with inotify, and swaps each
 * new entry for a symbolic link to `target` the moment it appears. Stops when `stop` exists
 * (or after 60 s); prints how many entries it swapped.
 */
const RACER = String.raw`
import ctypes, os, select, struct, sys, time
runs, target, stop, ready = sys.argv[1:5]
libc = ctypes.CDLL(None, use_errno=True)
os.makedirs(runs, exist_ok=True)
fd = libc.inotify_init1(os.O_NONBLOCK)
assert fd >= 0 and libc.inotify_add_watch(fd, runs.encode(), 0x100 | 0x80) >= 0
open(ready, "w").close()
swapped = 0
end = time.time() + 60
while time.time() < end and not os.path.exists(stop):
    if not select.select([fd], [], [], 0.05)[0]:
        continue
    data = os.read(fd, 65536)
    i = 0
    while i < len(data):
        _, mask, _, length = struct.unpack_from("iIII", data, i)
        name = data[i + 16:i + 16 + length].rstrip(b"\0").decode()
        i += 16 + length
        path = os.path.join(runs, name)
        if name.endswith(".moved") or os.path.islink(path):
            continue
        try:
            os.rename(path, path + ".moved")
            os.symlink(target, path)
            swapped += 1
        except OSError:
            pass
print(swapped)
`;

Deno.test({
  name:
    "job_user: a job that swaps each new run folder for a link cannot take a root-owned folder" +
    skip,
  ignore: nobody === null,
  async fn() {
    await withJobUserAgent(async ({ server, root, wd, dispatch }) => {
      const target = `${root}/system`;
      await Deno.mkdir(target);
      await Deno.chmod(target, 0o755);
      await Deno.writeTextFile(`${target}/config`, "root's\n");
      const stop = `${root}/stop-racer`;
      const racer = spawnAsNobody(RACER, [`${wd}/.gpuctl-runs`, target, stop, `${wd}/ready`]);
      let swapped = 0;
      try {
        await eventually("the racer's watch", async () => {
          try {
            return (await Deno.lstat(`${wd}/ready`)).isFile;
          } catch {
            return false;
          }
        });
        const runs = ["race-1", "race-2", "race-3"];
        for (const job_id of runs) {
          dispatch({ job_id, command: ["true"] });
          await eventually(`the end of ${job_id}`, () => endOf(server, `r-${job_id}`), 20_000);
        }
      } finally {
        await Deno.writeTextFile(stop, "");
        const out = await racer.output();
        swapped = Number(new TextDecoder().decode(out.stdout).trim());
      }
      // The race was run: each run's folder was swapped for a link as soon as it appeared.
      assert(swapped >= 1, `the racer swapped ${swapped} folders`);
      const after = await Deno.lstat(target);
      assertEquals(
        { uid: after.uid, gid: after.gid, mode: after.mode! & 0o7777 },
        { uid: 0, gid: 0, mode: 0o755 },
      );
      const file = await Deno.lstat(`${target}/config`);
      assertEquals([file.uid, await Deno.readTextFile(`${target}/config`)], [0, "root's\n"]);
    });
  },
});

/** An evaluation job that points its results file at `secret`, however its folder was made. */
function linkResultsTo(secret: string): string[] {
  return [
    PYTHON,
    "-c",
    [
      "import os, sys",
      "out = os.environ['GPUCTL_EVAL_OUTPUT']",
      "folder = os.path.dirname(out)",
      "try:",
      `    os.symlink(${JSON.stringify(secret)}, out)`,
      "except OSError:",
      // A folder the agent made as root: the working dir is the job's, so it moves it aside.
      "    os.rename(folder, folder + '.aside')",
      "    os.makedirs(folder)",
      `    os.symlink(${JSON.stringify(secret)}, out)`,
    ].join("\n"),
  ];
}

Deno.test({
  name: "job_user: an evaluation whose results file links to a root-only file never sends it" +
    skip,
  ignore: nobody === null,
  async fn() {
    await withJobUserAgent(async ({ server, logs, root, wd, dispatch }) => {
      const jsonSecret = "decoy-client-secret-7f3a9c";
      const textSecret = "pw-51be02-decoy-password";
      await Deno.writeTextFile(
        `${root}/credentials.json`,
        JSON.stringify({
          client_id: "decoy",
          client_secret: jsonSecret,
        }),
        { mode: 0o600 },
      );
      await Deno.writeTextFile(`${root}/shadow.txt`, `${textSecret}:root\n`, { mode: 0o600 });
      const evaluation = (id: string, secret: string) =>
        dispatch({
          job_id: id,
          kind: "EVALUATE",
          command: linkResultsTo(secret),
          env: { GPUCTL_EVAL_OUTPUT: `${wd}/.gpuctl/eval-${id}.json` },
        });
      evaluation("ev-json", `${root}/credentials.json`);
      await eventually("the first evaluation's end", () => endOf(server, "r-ev-json"), 20_000);
      evaluation("ev-text", `${root}/shadow.txt`);
      await eventually("the second evaluation's end", () => endOf(server, "r-ev-text"), 20_000);
      // Both jobs did plant their link (else the test proves nothing).
      for (const id of ["ev-json", "ev-text"]) {
        assertEquals(endOf(server, `r-${id}`)!.exit_code, 0, `${id} planted its link`);
        assert((await Deno.lstat(`${wd}/.gpuctl/eval-${id}.json`)).isSymlink);
      }
      const sent = everythingSent(server);
      const logged = logs.join("\n");
      // A JSON parser's message quotes a file's first characters: those count too.
      for (const secret of [jsonSecret, textSecret, textSecret.slice(0, 8)]) {
        assert(!sent.includes(secret), `"${secret}" reached the server`);
        assert(!logged.includes(secret), `"${secret}" is in the agent's log`);
      }
      assertEquals(server.of("sdk").filter((f) => f.batch.evaluation).length, 0);
      assertEquals(
        logs.filter((line) => line.includes("evaluation results file unusable")).length,
        2,
        logged,
      );
    });
  },
});

Deno.test({
  name: "job_user: an evaluation run as the job user writes its results and the agent sends them" +
    skip,
  ignore: nobody === null,
  async fn() {
    await withJobUserAgent(async ({ server, wd, dispatch }) => {
      const write = "import json, os; json.dump({'metrics': {'eval/accuracy': 0.97}, " +
        "'suite': 'heldout'}, open(os.environ['GPUCTL_EVAL_OUTPUT'], 'w'))";
      const out = `${wd}/.gpuctl/eval-ev-1.json`;
      dispatch({
        job_id: "ev-1",
        kind: "EVALUATE",
        command: [PYTHON, "-c", write],
        env: { GPUCTL_EVAL_OUTPUT: out },
      });
      const end = await eventually("the evaluation's end", () => endOf(server, "r-ev-1"), 20_000);
      assertEquals([end.state, end.exit_code], ["EXITED", 0]);
      const evaluations = server.of("sdk", "r-ev-1").flatMap((f) =>
        f.batch.evaluation ? [f.batch.evaluation] : []
      );
      assertEquals(evaluations, [{ metrics: { "eval/accuracy": 0.97 }, suite: "heldout" }]);
      // Sent ahead of the end, so the server records the results on the evaluation first.
      const order = server.applied.filter((f) => "run_id" in f && f.run_id === "r-ev-1");
      assert(
        order.findIndex((f) => f.type === "sdk") < order.findIndex((f) => f === end),
        "results before the end",
      );
      // The folders in the working dir are the job user's own.
      assertEquals((await Deno.lstat(`${wd}/.gpuctl`)).uid, nobody!.uid);
      assertEquals((await Deno.lstat(`${wd}/.gpuctl-runs/r-ev-1`)).uid, nobody!.uid);
      assertEquals((await Deno.lstat(out)).uid, nobody!.uid);
    });
  },
});

Deno.test({
  name:
    "job_user: the SDK's journal is taken, and a planted link on its offset file changes nothing" +
    skip,
  ignore: nobody === null,
  async fn() {
    await withJobUserAgent(async ({ server, root, dispatch }) => {
      const target = `${root}/system.conf`;
      await Deno.writeTextFile(target, "root's\n", { mode: 0o644 });
      // The job leaves a journal its SDK did not send, and links the offset file to root's file.
      const script = [
        "import json, os",
        "folder = os.path.join(os.environ['GPUCTL_RUN_DIR'], '.gpuctl')",
        "os.makedirs(folder)",
        "base = os.path.join(folder, os.environ['GPUCTL_RUN_ID'])",
        "point = {'key': 'loss', 'step': 1, 'value': 0.5}",
        "open(base + '.jsonl', 'w').write(json.dumps({'type': 'log', 'points': [point]}) + '\\n')",
        `os.symlink(${JSON.stringify(target)}, base + '.sent')`,
      ].join("\n");
      dispatch({ job_id: "journal", command: [PYTHON, "-c", script] });
      const end = await eventually("the end", () => endOf(server, "r-journal"), 20_000);
      assertEquals(end.exit_code, 0);
      const points = server.of("sdk", "r-journal").flatMap((f) => f.batch.points ?? []);
      assertEquals(points.map((p) => [p.key, p.step]), [["loss", 1]]);
      const after = await Deno.lstat(target);
      assertEquals(
        [after.uid, after.mode! & 0o7777, await Deno.readTextFile(target)],
        [0, 0o644, "root's\n"],
      );
    });
  },
});
