import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import {
  closedPort,
  REPO_ROOT,
  runInProcess,
  runSubprocess,
  startTestServer,
  tempHome,
  type TestServer,
} from "../_test_server.ts";

/** Runs `fn` with a server and a GPUCTL_HOME (with an empty spool) pointing at it. */
async function withServer(
  fn: (server: TestServer, env: Record<string, string>, spool: string) => Promise<void>,
): Promise<void> {
  const server = await startTestServer();
  const { home, cleanup } = await tempHome();
  try {
    const spool = join(home, "spool");
    await Deno.mkdir(spool);
    await fn(server, {
      GPUCTL_HOME: home,
      GPUCTL_SERVER_URL: server.url,
      GPUCTL_TOKEN: server.h.tokens.write,
    }, spool);
  } finally {
    await cleanup();
    await server.close();
  }
}

/** A clock a minute ahead, so files just written are not taken for live ones. */
const later = () => Date.now() + 60_000;

/** A spool file in the format of sdk/python/README.md, written by hand. */
function handWrittenSpool(runId: string): string {
  return [
    { type: "run", id: runId, project: "spooled", name: "by-hand", config: { lr: 0.01 } },
    {
      type: "log",
      points: [
        { key: "loss", step: 0, value: 2.5, wall_time: 1767225600.5 },
        { key: "loss", step: 1, value: "NaN", wall_time: 1767225601.5 },
      ],
      step: 1,
    },
    {
      type: "log",
      points: [{ key: "loss", step: 2, value: 1.5, wall_time: 1767225602.5 }],
      checkpoints: [{ path: "/abs/out/ckpt-2.pt", step: 2, size_bytes: 1024 }],
      step: 2,
      status: "SUCCEEDED",
    },
  ].map((line) => JSON.stringify(line) + "\n").join("") +
    `{"type":"log","points":[{"key":"loss","st`; // torn by a crash
}

/** Points per key, checkpoints and status of a run on the server. */
async function stored(server: TestServer, runId: string) {
  const run = await server.h.call("GET", `/api/runs/${runId}`);
  const metrics = await server.h.call("GET", `/api/runs/${runId}/metrics`);
  const checkpoints = await server.h.call("GET", `/api/runs/${runId}/checkpoints`);
  return {
    run: run.json,
    points: Object.fromEntries(
      (metrics.json.keys as { key: string; points: number }[]).map((k) => [k.key, k.points]),
    ),
    checkpoints: (checkpoints.json.items as { path: string }[]).map((c) => c.path),
  };
}

Deno.test("sync uploads a spool file written in the documented format, ignoring a torn last line", async () => {
  await withServer(async (server, env, spool) => {
    const runId = "r-0123456789ab";
    await Deno.writeTextFile(join(spool, `${runId}.jsonl`), handWrittenSpool(runId));
    const res = await runInProcess(["sync"], env, { now: later });
    assertEquals([res.code, res.stderr], [0, ""]);
    assertStringIncludes(
      res.stdout,
      `${runId}.jsonl: synced run ${runId}: 2 batches, 3 points, 1 checkpoint; ` +
        `moved to synced/${runId}.jsonl (a torn last line was left out)`,
    );
    const got = await stored(server, runId);
    assertEquals(
      [got.run.name, got.run.project, got.run.config, got.run.status, got.run.source],
      ["by-hand", "spooled", { lr: 0.01 }, "SUCCEEDED", "sdk"],
    );
    assertEquals(got.points, { loss: 3 });
    assertEquals(got.checkpoints, ["/abs/out/ckpt-2.pt"]);
    const query = await server.h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [runId], keys: ["loss"] },
    });
    assertEquals(query.json.series[0].values, [2.5, "NaN", 1.5]);
    assertEquals([...Deno.readDirSync(spool)].map((e) => e.name), ["synced"]);
  });
});

Deno.test("sync twice adds nothing, and neither does replaying a file already synced", async () => {
  await withServer(async (server, env, spool) => {
    const runId = "r-00000000aaaa";
    const text = handWrittenSpool(runId);
    await Deno.writeTextFile(join(spool, `${runId}.jsonl`), text);
    assertEquals((await runInProcess(["sync"], env, { now: later })).code, 0);
    const before = await stored(server, runId);

    const again = await runInProcess(["sync"], env, { now: later });
    assertEquals(again.code, 0);
    assertStringIncludes(again.stdout, "Nothing to sync");

    await Deno.writeTextFile(join(spool, `${runId}.jsonl`), text);
    const replay = await runInProcess(["sync", "--json"], env, { now: later });
    assertEquals(replay.code, 0);
    const [result] = JSON.parse(replay.stdout).results;
    assertEquals([result.status, result.moved_to], [
      "synced",
      join(spool, "synced", `${runId}.2.jsonl`),
    ]);
    assertEquals(await stored(server, runId), before);
    assertEquals((await server.h.call("GET", "/api/runs")).json.items.length, 1);
  });
});

Deno.test("sync (a subprocess) uploads what the Python SDK spooled with no server", async () => {
  await withServer(async (server, env, spool) => {
    const script = [
      "from gpuctl import run",
      'run.init(project="offline", name="py-run", config={"lr": 0.1})',
      'for s in range(50): run.log({"loss": 1 / (s + 1), "acc": s / 50})',
      'run.log({"loss": float("nan")}, step=50)',
      'run.log_checkpoint("/abs/out/ckpt-50.pt", step=50)',
      "run.finish()",
      "print(run.id)",
    ].join("\n");
    const python = await new Deno.Command("python3", {
      args: ["-c", script],
      cwd: REPO_ROOT,
      env: {
        PYTHONPATH: join(REPO_ROOT, "sdk/python"),
        GPUCTL_HOME: env.GPUCTL_HOME,
        GPUCTL_SERVER_URL: `http://127.0.0.1:${closedPort()}`,
        GPUCTL_TOKEN: "gpc_unused",
      },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const runId = new TextDecoder().decode(python.stdout).trim();
    assertEquals([python.code, new TextDecoder().decode(python.stderr)], [0, ""]);
    assertEquals([...Deno.readDirSync(spool)].map((e) => e.name), [`${runId}.jsonl`]);

    const res = await runSubprocess(["sync", "--force"], env);
    assertEquals([res.code, res.stderr], [0, ""]);
    assertStringIncludes(res.stdout, `${runId}.jsonl: synced run ${runId}`);
    assertStringIncludes(res.stdout, "Synced 1 of 1 spool file to");
    const got = await stored(server, runId);
    assertEquals([got.run.name, got.run.project, got.run.config], ["py-run", "offline", {
      lr: 0.1,
    }]);
    assertEquals(got.points, { acc: 50, loss: 51 });
    assertEquals(got.checkpoints, ["/abs/out/ckpt-50.pt"]);
    assertEquals(got.run.status, "SUCCEEDED");
  });
});

Deno.test("sync skips a file changed in the last 5 s unless --force", async () => {
  await withServer(async (server, env, spool) => {
    const path = join(spool, "r-11111111aaaa.jsonl");
    await Deno.writeTextFile(path, handWrittenSpool("r-11111111aaaa"));
    const res = await runInProcess(["sync"], env);
    assertEquals(res.code, 0);
    assertStringIncludes(res.stdout, "r-11111111aaaa.jsonl: skipped: changed ");
    assertStringIncludes(res.stdout, "pass --force");
    assertEquals((await server.h.call("GET", "/api/runs")).json.items, []);
    await Deno.stat(path); // still there

    const forced = await runInProcess(["sync", "--force"], env);
    assertEquals(forced.code, 0);
    assertStringIncludes(forced.stdout, "synced run r-11111111aaaa");
  });
});

Deno.test("sync leaves a file it cannot send, reports it, still syncs the others, and exits 1", async () => {
  await withServer(async (server, env, spool) => {
    await Deno.writeTextFile(
      join(spool, "r-aaaaaaaaaaaa.jsonl"),
      `{"type":"run","id":"r-aaaaaaaaaaaa"}\n{"type":"log","points":\n{"type":"log"}\n`,
    );
    await Deno.writeTextFile(
      join(spool, "r-bbbbbbbbbbbb.jsonl"),
      handWrittenSpool("r-bbbbbbbbbbbb"),
    );
    // Log lines only, for a run the server never saw.
    await Deno.writeTextFile(
      join(spool, "r-cccccccccccc.jsonl"),
      `{"type":"log","points":[{"key":"x","step":0,"value":1}]}\n`,
    );
    const res = await runInProcess(["sync"], env, { now: later });
    assertEquals(res.code, 1);
    const lines = res.stdout.split("\n");
    assertStringIncludes(lines[0], "r-aaaaaaaaaaaa.jsonl: FAILED: ");
    assertStringIncludes(lines[0], "line 2 is not a JSON object; the file stays in the spool");
    assertStringIncludes(lines[1], "r-bbbbbbbbbbbb.jsonl: synced run r-bbbbbbbbbbbb");
    assertStringIncludes(lines[2], "r-cccccccccccc.jsonl: FAILED (run r-cccccccccccc)");
    assertStringIncludes(lines[2], 'Run "r-cccccccccccc"');
    assertStringIncludes(lines[3], "Synced 1 of 3 spool files");
    assertStringIncludes(lines[3], "2 failed");
    const left = [...Deno.readDirSync(spool)].map((e) => e.name).sort();
    assertEquals(left, ["r-aaaaaaaaaaaa.jsonl", "r-cccccccccccc.jsonl", "synced"]);
    assert((await server.h.call("GET", "/api/runs/r-bbbbbbbbbbbb")).status === 200);
  });
});

Deno.test("sync with no spool folder needs no server and says there is nothing to do", async () => {
  const { home, cleanup } = await tempHome();
  try {
    const res = await runInProcess(["sync"], { GPUCTL_HOME: home });
    assertEquals(res.code, 0);
    assertStringIncludes(res.stdout, `Nothing to sync: no spool files in ${join(home, "spool")}`);
  } finally {
    await cleanup();
  }
});

Deno.test("sync starts where the SDK's own delivery stopped, cuts an oversized config, and leaves out only bad items", async () => {
  await withServer(async (server, env, spool) => {
    const runId = "r-00000000cccc";
    const huge = { lr: 0.1, vocab: "w".repeat(9 * 1024 * 1024) };
    const lines = [
      { type: "run", id: runId, project: "cut", config: huge },
      { type: "log", points: [{ key: "loss", step: 0, value: 1 }] },
      {
        type: "log",
        points: [{ key: "loss", step: 1, value: 1 }, { key: "nul\u0000", step: 1, value: 1 }],
      },
    ].map((line) => JSON.stringify(line) + "\n");
    await Deno.writeTextFile(join(spool, `${runId}.jsonl`), lines.join(""));
    // The SDK delivered the first log line itself before its process ended.
    const sent = new TextEncoder().encode(lines[0] + lines[1]).length;
    await Deno.writeTextFile(join(spool, `${runId}.sent`), `${sent}\n`);
    const res = await runInProcess(["sync"], env, { now: later });
    assertEquals([res.code, res.stderr], [0, ""]);
    assertStringIncludes(res.stdout, "1 batch, 1 point");
    assertStringIncludes(res.stdout, "config of 9437205 bytes is over");
    assertStringIncludes(res.stdout, "points.1.key must not contain control characters");
    const got = await stored(server, runId);
    assertEquals(got.points, { loss: 1 });
    assertEquals(Object.keys(got.run.config), ["gpuctl_config_cut"]);
    assertEquals([...Deno.readDirSync(spool)].map((e) => e.name), ["synced"]);
  });
});
