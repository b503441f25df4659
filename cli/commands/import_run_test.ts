import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import {
  runInProcess,
  runSubprocess,
  startTestServer,
  tempHome,
  type TestServer,
  TFEVENTS_FIXTURES,
} from "../_test_server.ts";
import {
  eventFileBytes,
  fileVersionEvent,
  hparamsSessionEvent,
  summaryEvent,
} from "../../agent/tensorboard/_event_writer.ts";

const KERAS = join(TFEVENTS_FIXTURES, "keras-exp0");
const TORCH = join(TFEVENTS_FIXTURES, "torch-logs");
const KERAS_KEYS = [
  "train/epoch_accuracy",
  "train/epoch_loss",
  "validation/epoch_accuracy",
  "validation/epoch_loss",
  "validation/evaluation_accuracy_vs_iterations",
  "validation/evaluation_loss_vs_iterations",
];

/** Runs `fn` with a server and a GPUCTL_HOME whose environment points at it. */
async function withServer(
  fn: (server: TestServer, env: Record<string, string>) => Promise<void>,
): Promise<void> {
  const server = await startTestServer();
  const { home, cleanup } = await tempHome();
  try {
    await fn(server, {
      GPUCTL_HOME: home,
      GPUCTL_SERVER_URL: server.url,
      GPUCTL_TOKEN: server.h.tokens.write,
    });
  } finally {
    await cleanup();
    await server.close();
  }
}

/** What the server stores for a run: points per key and checkpoints. */
async function stored(server: TestServer, runId: string) {
  const metrics = await server.h.call("GET", `/api/runs/${runId}/metrics`);
  const checkpoints = await server.h.call("GET", `/api/runs/${runId}/checkpoints`);
  const keys: { key: string; points: number }[] = metrics.json.keys;
  return {
    keys: keys.map((k) => k.key),
    points: keys.reduce((n, k) => n + k.points, 0),
    checkpoints: checkpoints.json.items as {
      path: string;
      step: number | null;
      size_bytes: number;
      metrics: Record<string, number>;
    }[],
  };
}

Deno.test("import-run of keras-exp0 stores 60 points under 6 keys and 10 TensorFlow checkpoints", async () => {
  await withServer(async (server, env) => {
    const res = await runInProcess(["import-run", KERAS, "--project", "imports", "--json"], env);
    assertEquals([res.code, res.stderr], [0, ""]);
    const summary = JSON.parse(res.stdout);
    assertEquals(
      [summary.points, summary.keys, summary.checkpoints, summary.created],
      [60, KERAS_KEYS, 10, true],
    );
    assertEquals(summary.name, "keras-exp0");

    const got = await stored(server, summary.run_id);
    assertEquals([got.points, got.keys], [60, KERAS_KEYS]);
    assertEquals(got.checkpoints.map((c) => c.step), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const ckpt9 = got.checkpoints[9];
    assertEquals(ckpt9.path, join(await Deno.realPath(KERAS), "train", "keras_embedding.ckpt-9"));
    assertEquals(ckpt9.size_bytes, 967);
    // The server filled in the metrics at the checkpoint's step.
    assert(Math.abs(ckpt9.metrics["train/epoch_loss"] - 0.0319) < 1e-3, JSON.stringify(ckpt9));

    const run = (await server.h.call("GET", `/api/runs/${summary.run_id}`)).json;
    assertEquals(
      [run.source, run.status, run.job_id, run.project, run.name, run.step],
      ["import", "IMPORTED", null, "imports", "keras-exp0", 15000],
    );
  });
});

Deno.test("import-run of the same folder twice reuses the run and stores nothing twice", async () => {
  await withServer(async (server, env) => {
    const argv = ["import-run", KERAS, "--project", "imports", "--json"];
    const first = JSON.parse((await runInProcess(argv, env)).stdout);
    const second = JSON.parse((await runInProcess(argv, env)).stdout);
    assertEquals(second.run_id, first.run_id);
    assertEquals([first.created, second.created, second.new_checkpoints], [true, false, 0]);
    const got = await stored(server, first.run_id);
    assertEquals([got.points, got.keys.length, got.checkpoints.length], [60, 6, 10]);
    const runs = (await server.h.call("GET", "/api/runs?project=imports")).json.items;
    assertEquals(runs.length, 1);
  });
});

Deno.test("import-run through a symbolic link is the same import as the folder itself", async () => {
  await withServer(async (_server, env) => {
    const link = join(env.GPUCTL_HOME, "torch-link");
    await Deno.symlink(TORCH, link);
    const argv = (dir: string) => ["import-run", dir, "--project", "p", "--json"];
    const direct = JSON.parse((await runInProcess(argv(TORCH), env)).stdout);
    const linked = JSON.parse((await runInProcess(argv(link), env)).stdout);
    assertEquals([linked.run_id, linked.created], [direct.run_id, false]);
  });
});

Deno.test("import-run of torch-logs as a subprocess: 100 points of y=x with the newer file's 2*step", async () => {
  await withServer(async (server, env) => {
    const res = await runSubprocess(
      ["import-run", TORCH, "--project", "imports", "--experiment", "e1", "--name", "torch"],
      env,
    );
    assertEquals([res.code, res.stderr], [0, ""]);
    assertStringIncludes(res.stdout, "100 points under 1 key: y=x");
    assertStringIncludes(res.stdout, "0 checkpoints");
    const runId = /as run (\S+) /.exec(res.stdout)?.[1];
    assert(runId, res.stdout);
    const query = await server.h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [runId], keys: ["y=x"] },
    });
    const [series] = query.json.series;
    assertEquals(series.steps, Array.from({ length: 100 }, (_, i) => i));
    assertEquals(series.values, series.steps.map((s: number) => 2 * s));
    const run = (await server.h.call("GET", `/api/runs/${runId}`)).json;
    assertEquals([run.name, run.experiment], ["torch", "e1"]);
  });
});

Deno.test("import-run usage errors exit 2 and say what is wrong", async () => {
  const env = { GPUCTL_HOME: "/nonexistent", GPUCTL_SERVER_URL: "http://x", GPUCTL_TOKEN: "t" };
  const noProject = await runInProcess(["import-run", TORCH], env);
  assertEquals(noProject.code, 2);
  assertStringIncludes(noProject.stderr, "--project is required");
  const noDir = await runInProcess(["import-run", "--project", "p"], env);
  assertEquals(noDir.code, 2);
  assertStringIncludes(noDir.stderr, "DIR is required");
  const unknown = await runInProcess(["import-run", TORCH, "--project", "p", "--nme", "x"], env);
  assertEquals(unknown.code, 2);
  assertStringIncludes(unknown.stderr, "--nme");
  const help = await runInProcess(["import-run", "--help"], env);
  assertEquals(help.code, 0);
  assertStringIncludes(help.stdout, "usage: gpuctl import-run DIR --project P");
});

Deno.test("import-run of a missing folder fails with exit 1 and creates no run", async () => {
  await withServer(async (server, env) => {
    const res = await runInProcess(["import-run", "/nonexistent/exp", "--project", "p"], env);
    assertEquals(res.code, 1);
    assertStringIncludes(res.stderr, 'Cannot import "/nonexistent/exp"');
    assertEquals((await server.h.call("GET", "/api/runs")).json.items, []);
  });
});

Deno.test("import-run with a read token fails with the server's message", async () => {
  await withServer(async (server, env) => {
    const res = await runInProcess(["import-run", TORCH, "--project", "p"], {
      ...env,
      GPUCTL_TOKEN: server.h.tokens.read,
    });
    assertEquals(res.code, 1);
    assertStringIncludes(res.stderr, 'has scope "read"');
  });
});

Deno.test("import-run says what it left out of the Keras run: graphs, histograms and images by kind", async () => {
  await withServer(async (_server, env) => {
    const json = await runInProcess(["import-run", KERAS, "--project", "p", "--json"], env);
    assertEquals(JSON.parse(json.stdout).left_out, { graphs: 2, histograms: 40, images: 40 });
    const text = await runInProcess(["import-run", KERAS, "--project", "p"], env);
    assertStringIncludes(text.stdout, "left out: 2 graphs, 40 histograms, 40 images");
    assertStringIncludes(text.stdout, "60 points under 6 keys");
    assertStringIncludes(text.stdout, "(0 new)");
  });
});

Deno.test("import-run makes the hparams session the run's config, reports a cut-off tail, and counts new points on a re-import", async () => {
  await withServer(async (server, env) => {
    const dir = join(env.GPUCTL_HOME, "exp");
    await Deno.mkdir(dir);
    const scalars = (from: number, n: number) =>
      Array.from(
        { length: n },
        (_, i) =>
          summaryEvent(from + i, 100 + i, [{ tag: "loss", simpleValue: 1 / (from + i + 1) }]),
      );
    const first = eventFileBytes([
      fileVersionEvent(100),
      hparamsSessionEvent(100, { lr: 0.001, optimizer: "adam", layers: 4, dropout_on: true }),
      ...scalars(0, 3),
    ]);
    // A record cut off by a crash of the writer: its first bytes only.
    const cut = eventFileBytes(scalars(3, 1)).subarray(0, 10);
    const firstFile = join(dir, "events.out.tfevents.100.host");
    await Deno.writeFile(firstFile, new Uint8Array([...first, ...cut]));
    const argv = ["import-run", dir, "--project", "p", "--json"];
    const imported = JSON.parse((await runInProcess(argv, env)).stdout);
    assertEquals([imported.points, imported.new_points], [3, 3]);
    assertEquals(imported.left_out, { truncated_tails: 1 });
    assertEquals(imported.config_keys, ["dropout_on", "layers", "lr", "optimizer"]);
    const run = (await server.h.call("GET", `/api/runs/${imported.run_id}`)).json;
    assertEquals(run.config, { lr: 0.001, optimizer: "adam", layers: 4, dropout_on: true });

    // The run went on in a new file: a re-import adds its two points only.
    await Deno.writeFile(
      join(dir, "events.out.tfevents.200.host"),
      eventFileBytes([fileVersionEvent(200), ...scalars(3, 2)]),
    );
    const again = await runInProcess(["import-run", dir, "--project", "p"], env);
    assertEquals([again.code, again.stderr], [0, ""]);
    assertStringIncludes(again.stdout, "Re-imported");
    assertStringIncludes(again.stdout, "5 points under 1 key: loss (2 new)");
    assertStringIncludes(again.stdout, "config from the hparams plugin: dropout_on, layers, lr");
    assertStringIncludes(again.stdout, "left out: 1 file cut off mid-record");
  });
});
