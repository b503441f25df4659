import { assert, assertEquals, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import type { NewDataFrame } from "./frames.ts";
import {
  createIngestHandler,
  ingestSocketPath,
  MAX_SOCKET_PATH,
  runKeyFrom,
  startIngestServer,
  startTcpIngestServer,
  tcpIngestUrl,
} from "./ingest_server.ts";
import { silentLogger } from "./log.ts";
import { lookupUser } from "./runner/job_user.ts";

function setup() {
  const frames: NewDataFrame[] = [];
  const deps = {
    findRun: (runId: string) =>
      runId === "r-1" ? { job_id: "j-1", attempt: 1, run_id: "r-1" } : null,
    emit: (frame: NewDataFrame) => Promise.resolve(frames.push(frame)),
    log: silentLogger,
  };
  return { frames, handler: createIngestHandler(deps), deps };
}

const post = (path: string, body: string) =>
  new Request(`http://127.0.0.1${path}`, { method: "POST", body });

Deno.test("ingest spools a batch as an sdk frame, as sent, and answers with counts", async () => {
  const { frames, handler } = setup();
  const body = JSON.stringify({ points: [{ key: "loss", step: 1, value: "NaN" }], step: 1 });
  const res = await handler(post("/runs/r-1/log", body));
  assertEquals(res.status, 200);
  assertEquals(await res.json(), {
    accepted: { points: 1, checkpoints: 0, logs: 0, evaluation: 0 },
  });
  assertEquals(frames, [{
    type: "sdk",
    stream: "data",
    job_id: "j-1",
    attempt: 1,
    run_id: "r-1",
    batch: { points: [{ key: "loss", step: 1, value: "NaN" }], step: 1 },
  }]);
});

Deno.test("ingest forwards points sent as columns as the rows they stand for, and names a bad group", async () => {
  const { frames, handler } = setup();
  const column = (numbers: number[], ints = false) => {
    const view = new DataView(new ArrayBuffer(numbers.length * 8));
    numbers.forEach((n, i) =>
      ints ? view.setBigInt64(i * 8, BigInt(n), true) : view.setFloat64(i * 8, n, true)
    );
    return new Uint8Array(view.buffer).toBase64();
  };
  const good = {
    keys: ["loss"],
    steps: column([3, 4], true),
    wall_times: column([1.5, 2.5]),
    values: [column([Number.NaN, 0.25])],
  };
  const bad = { ...good, wall_times: column([1.5]) };
  const res = await handler(post("/runs/r-1/log", JSON.stringify({ columns: [good, bad] })));
  assertEquals(await res.json(), {
    accepted: { points: 2, checkpoints: 0, logs: 0, evaluation: 0 },
    refused: {
      count: 1,
      items: [{
        path: "columns.1.wall_times",
        message: "must hold 2 times, one per step: it holds 1",
      }],
    },
  });
  assertEquals(frames.map((f) => f.type === "sdk" && f.batch), [{
    points: [
      { key: "loss", step: 3, value: "NaN", wall_time: 1.5 },
      { key: "loss", step: 4, value: 0.25, wall_time: 2.5 },
    ],
  }]);
});

Deno.test("ingest refuses unknown runs and bad JSON with a clear 4xx, and forwards nothing invalid", async () => {
  const { frames, handler } = setup();
  const unknown = await handler(post("/runs/r-9/log", "{}"));
  assertEquals(unknown.status, 404);
  assertStringIncludes((await unknown.json()).error.message, `Run "r-9" is not running`);
  const notJson = await handler(post("/runs/r-1/log", "{nope"));
  assertEquals(notJson.status, 400);
  const notObject = await handler(post("/runs/r-1/log", "[1]"));
  assertEquals(notObject.status, 400);
  // A batch with nothing valid in it is answered, its refusals named, and not forwarded.
  const invalid = await handler(post("/runs/r-1/log", JSON.stringify({ points: [{ key: "x" }] })));
  assertEquals(invalid.status, 200);
  assertEquals((await invalid.json()).refused.items[0].path, "points.0.step");
  const unknownField = await handler(post("/runs/r-1/log", JSON.stringify({ lr: 1 })));
  assertEquals((await unknownField.json()).refused.items, [
    { path: "lr", message: "is not a field of a log batch" },
  ]);
  assertEquals((await handler(new Request("http://127.0.0.1/runs/r-1/log"))).status, 405);
  assertEquals((await handler(post("/other", "{}"))).status, 404);
  assertEquals(frames, []);
});

async function postOverSocket(socketPath: string, body: unknown) {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: socketPath } });
  try {
    const res = await fetch("http://localhost/runs/r-1/log", {
      method: "POST",
      body: JSON.stringify(body),
      client,
    });
    return { status: res.status, json: await res.json() };
  } finally {
    client.close();
  }
}

Deno.test("the ingest socket has the same path after a restart, and the next agent serves it", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "gpuctl-ingest-" });
  const { frames, deps } = setup();
  try {
    const path = ingestSocketPath(dataDir);
    assertEquals(path, `${dataDir}/ingest/ingest.sock`);
    const first = await startIngestServer(deps, path);
    assertEquals((await postOverSocket(path, { logs: [{ text: "one" }] })).status, 200);
    assertEquals((await Deno.stat(`${dataDir}/ingest`)).mode! & 0o777, 0o700);
    await first.stop();
    // A URL handed to a job before the restart reaches the agent started after it.
    const second = await startIngestServer(deps, ingestSocketPath(dataDir));
    try {
      assertEquals((await postOverSocket(path, { logs: [{ text: "two" }] })).status, 200);
      await assertRejects(() => startIngestServer(deps, path), "another agent");
    } finally {
      await second.stop();
    }
    assertEquals(frames.map((f) => f.type === "sdk" && f.batch.logs?.[0].text), ["one", "two"]);
  } finally {
    await Deno.remove(dataDir, { recursive: true });
  }
});

Deno.test("ingestSocketPath() moves a socket too deep for the kernel to a stable temp folder", () => {
  const deep = `/data/${"d".repeat(120)}`;
  const path = ingestSocketPath(deep, "/tmp");
  assertEquals(path, ingestSocketPath(deep, "/tmp"));
  assert(path.startsWith("/tmp/gpuctl-ingest-") && path.length <= MAX_SOCKET_PATH);
  assert(path !== ingestSocketPath(`${deep}x`, "/tmp"));
});

Deno.test("ingest keeps the valid part of a batch and names what it refused", async () => {
  const { frames, handler } = setup();
  const body = {
    points: [
      { key: "loss", step: 1, value: 0.5 },
      { key: "nul\u0000", step: 1, value: 1 },
      { key: "sur\ud800", step: 1, value: 1 },
      { key: "acc", step: 1, value: 0.9 },
    ],
    checkpoints: [{ path: "x".repeat(70_000) }, { path: "/ok.pt", step: 1 }],
    status: "BOGUS",
    step: 1,
  };
  // JSON.stringify keeps a lone surrogate as the escape \ud800, as Python's json does.
  const res = await handler(post("/runs/r-1/log", JSON.stringify(body)));
  assertEquals(res.status, 200);
  const answer = await res.json();
  assertEquals(answer.accepted, { points: 2, checkpoints: 1, logs: 0, evaluation: 0 });
  assertEquals(answer.refused.count, 4);
  assertEquals(
    answer.refused.items.map((i: { path: string }) => i.path),
    ["points.1.key", "points.2.key", "checkpoints.0.path", "status"],
  );
  assertEquals(frames.length, 1);
  const sent = frames[0].type === "sdk" ? frames[0].batch : null;
  assertEquals(sent?.points?.map((p) => p.key), ["loss", "acc"]);
  assertEquals(sent?.checkpoints, [{ path: "/ok.pt", step: 1 }]);
  assertEquals(sent?.status, undefined);
});

Deno.test("the TCP ingest endpoint of a Slurm agent takes a batch only with the run's own key", async () => {
  const dir = await Deno.makeTempDir({ prefix: "gpuctl-ingest-key-" });
  try {
    const key = await runKeyFrom(dir);
    // The same secret after a restart: a job started under the last agent still gets in.
    assertEquals((await runKeyFrom(dir))("r-1"), key("r-1"));
    assert(key("r-1") !== key("r-2"));
    const { frames, deps } = setup();
    const server = await startTcpIngestServer(deps, "127.0.0.1", 0, key);
    try {
      const url = tcpIngestUrl("127.0.0.1", server.port, key("r-1"), "r-1");
      assertEquals(url, `http://127.0.0.1:${server.port}/k/${key("r-1")}/runs/r-1`);
      const body = JSON.stringify({ points: [{ key: "loss", step: 1, value: 1 }] });
      const ok = await fetch(`${url}/log`, { method: "POST", body });
      assertEquals(ok.status, 200);
      await ok.body?.cancel();
      const base = `http://127.0.0.1:${server.port}`;
      for (const path of [`/runs/r-1/log`, `/k/${key("r-2")}/runs/r-1/log`]) {
        const refused = await fetch(`${base}${path}`, { method: "POST", body });
        assertEquals(refused.status, 404, path);
        await refused.body?.cancel();
      }
      assertEquals(frames.length, 1);
    } finally {
      await server.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

const nobody = Deno.uid() === 0 ? lookupUser("nobody") : null;

Deno.test({
  name: "a socket folder another user made first in the temp dir is refused, and left as it was" +
    (nobody ? "" : " (skipped: needs the tests to run as root, with a user nobody)"),
  ignore: nobody === null,
  async fn() {
    const { deps } = setup();
    const { uid, gid } = nobody!;
    const base = await Deno.makeTempDir({ prefix: "gpuctl-ingest-tmp-" });
    try {
      // A sticky, world-writable temp dir, and a root-owned folder elsewhere.
      const tmp = `${base}/tmp`;
      await Deno.mkdir(tmp);
      await Deno.chmod(tmp, 0o1777);
      await Deno.chmod(base, 0o755);
      const target = `${base}/system`;
      await Deno.mkdir(target);
      await Deno.chmod(target, 0o755);
      const socketPath = ingestSocketPath(`${base}/data`, tmp, true);
      const folder = socketPath.slice(0, socketPath.lastIndexOf("/"));
      // The job user (nobody) knows the name in advance and plants a link there.
      const asNobody = (...argv: string[]) =>
        new Deno.Command("setpriv", {
          args: [`--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--", ...argv],
        }).output();
      assert((await asNobody("ln", "-s", target, folder)).success);
      const refused = await assertRejects(() => startIngestServer(deps, socketPath, gid));
      assertStringIncludes(refused.message, "a symbolic link");
      const after = await Deno.stat(target);
      assertEquals([after.uid, after.gid, after.mode! & 0o7777], [0, 0, 0o755]);
      // A real folder of its own is refused too: it could swap the socket inside it.
      await Deno.remove(folder);
      assert((await asNobody("mkdir", folder)).success);
      const owned = await assertRejects(() => startIngestServer(deps, socketPath, gid));
      assertStringIncludes(owned.message, `owned by uid ${uid}`);
    } finally {
      await Deno.remove(base, { recursive: true });
    }
  },
});
