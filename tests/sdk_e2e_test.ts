/** The Python SDK against the real server: a script's points come back from the API. */
import { assertEquals } from "./assert.ts";
import { createHarness } from "./_harness.ts";
import { parseSpoolFile } from "../cli/spool_file.ts";

const SDK = new URL("../sdk/python", import.meta.url).pathname;

const SCRIPT = `
import math
from gpuctl import run
run.init(project="e2e", experiment="sdk", name="py", config={"lr": 0.01, "layers": [64, 64]})
for step in range(300):
    run.log({"train/loss": 1.0 / (step + 1), "eval/accuracy": step / 300.0}, step=step)
run.log({"train/loss": float("nan")}, step=300)
run.log_checkpoint(__file__, step=299, epoch=3)
print(run.id)
run.finish()
`;

Deno.test("points, checkpoints and the end of a Python SDK run reach the server", async () => {
  const h = await createHarness();
  const abort = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: abort.signal, onListen: () => {} },
    h.app.fetch,
  );
  const home = await Deno.makeTempDir({ prefix: "gpuctl-sdk-home-" });
  try {
    const script = `${home}/train.py`;
    await Deno.writeTextFile(script, SCRIPT);
    const out = await new Deno.Command("python3", {
      args: [script],
      env: {
        PYTHONPATH: SDK,
        GPUCTL_SERVER_URL: `http://127.0.0.1:${server.addr.port}`,
        GPUCTL_TOKEN: h.tokens.write,
        GPUCTL_HOME: home,
      },
    }).output();
    const stdout = new TextDecoder().decode(out.stdout).trim();
    assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
    const runId = stdout;
    const run = await h.call("GET", `/api/runs/${runId}`);
    assertEquals([run.json.status, run.json.source, run.json.project, run.json.step], [
      "SUCCEEDED",
      "sdk",
      "e2e",
      300,
    ]);
    assertEquals(run.json.config.lr, 0.01);
    const q = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [runId], keys: ["train/loss", "eval/accuracy"] },
    });
    const loss = q.json.series.find((s: { key: string }) => s.key === "train/loss");
    assertEquals(loss.steps.length, 301);
    assertEquals(loss.values[0], 1);
    assertEquals(loss.values[300], "NaN");
    const acc = q.json.series.find((s: { key: string }) => s.key === "eval/accuracy");
    assertEquals(acc.steps.length, 300);
    const cks = await h.call("GET", `/api/runs/${runId}/checkpoints`);
    assertEquals(cks.json.items.map((c: { step: number; path: string }) => [c.step, c.path]), [[
      299,
      script,
    ]]);
    // Nothing was spooled: the server was there.
    const spooled = [...Deno.readDirSync(home)].map((e) => e.name);
    assertEquals(spooled.includes("spool") ? [...Deno.readDirSync(`${home}/spool`)].length : 0, 0);
  } finally {
    abort.abort();
    await server.finished;
    await h.close();
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("the server stores the valid part of an SDK batch, names what it refused, and tells of lost points", async () => {
  const h = await createHarness();
  try {
    const run = (await h.call("POST", "/api/sdk/runs", { body: { id: "r-partial" } })).json;
    const points = Array.from({ length: 444 }, (_, step) => ({ key: "loss", step, value: 1 }));
    const res = await h.call("POST", `/api/sdk/runs/${run.id}/log`, {
      body: {
        points: [...points, { key: "nul\u0000", step: 0, value: 1 }, {
          key: "sur\ud800",
          step: 0,
          value: 1,
        }],
        checkpoints: [{ path: "/c/" + "x".repeat(65_537) }, { path: "/c/ok.pt", step: 443 }],
        dropped: 7,
      },
    });
    assertEquals(res.status, 200);
    assertEquals(res.json.accepted.points, 444);
    assertEquals(res.json.accepted.checkpoints, 1);
    assertEquals(
      res.json.refused.items.map((i: { path: string }) => i.path),
      ["points.444.key", "points.445.key", "checkpoints.0.path"],
    );
    const q = await h.call("POST", "/api/runs/metrics:query", {
      body: { runs: [run.id], keys: ["loss", "nul", "sur\ufffd"] },
    });
    const counts = q.json.series.map((s: { key: string; steps: number[] }) => [
      s.key,
      s.steps.length,
    ]);
    assertEquals(counts.filter(([, n]: [string, number]) => n > 0), [["loss", 444]]);
    const stored = (await h.call("GET", `/api/runs/${run.id}`)).json;
    assertEquals(stored.dropped_points, 7);
    const events = await h.call("GET", `/api/events?run_id=${run.id}&type=POINTS_DROPPED`);
    assertEquals(events.json.items.length, 1);
    const notObject = await h.call("POST", `/api/sdk/runs/${run.id}/log`, { body: [1] });
    assertEquals(notObject.status, 400);
  } finally {
    await h.close();
  }
});

/** Logs key sets that change, NaN and ±Infinity, steps given and counted. */
const COLUMNS_SCRIPT = `
import math
from gpuctl import run
run.init(project="e2e", name="columns")
for step in range(2500):
    run.log({"train/loss": 1.0 / (step + 1), "lr": 0.001})
    if step % 500 == 499:
        run.log({"eval/acc": step / 2500.0}, step=step)
run.log({"train/loss": float("nan"), "lr": float("inf")})
run.log({"train/loss": -0.0, "lr": -math.inf}, step=10 ** 15)
print(run.id)
run.finish()
`;

/** What COLUMNS_SCRIPT logged, key by key: [step, value as the API spells it]. */
function columnsScriptPoints(): Map<string, [number, number | string][]> {
  const series = new Map<string, [number, number | string][]>([
    ["train/loss", []],
    ["lr", []],
    ["eval/acc", []],
  ]);
  for (let step = 0; step < 2500; step++) {
    series.get("train/loss")!.push([step, 1 / (step + 1)]);
    series.get("lr")!.push([step, 0.001]);
    if (step % 500 === 499) series.get("eval/acc")!.push([step, step / 2500]);
  }
  series.get("train/loss")!.push([2500, "NaN"], [1e15, 0]); // -0 comes back as 0 (JSON)
  series.get("lr")!.push([2500, "Infinity"], [1e15, "-Infinity"]);
  return series;
}

async function storedSeries(h: Awaited<ReturnType<typeof createHarness>>, runId: string) {
  const q = await h.call("POST", "/api/runs/metrics:query", {
    body: { runs: [runId], keys: ["train/loss", "lr", "eval/acc"], max_points: 100_000 },
  });
  const out = new Map<string, { points: [number, number | string][]; walls: number[] }>();
  for (const s of q.json.series) {
    out.set(s.key, {
      points: s.steps.map((step: number, i: number) => [step, s.values[i]]),
      walls: s.wall_times,
    });
  }
  return out;
}

Deno.test("a real SDK run's columnar batches, sent live or replayed from its spool, are stored as the same points as rows", async () => {
  const h = await createHarness();
  const bodies: Record<string, unknown>[] = [];
  const abort = new AbortController();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, signal: abort.signal, onListen: () => {} },
    async (req) => {
      if (new URL(req.url).pathname.endsWith("/log")) bodies.push(await req.clone().json());
      return h.app.fetch(req);
    },
  );
  const home = await Deno.makeTempDir({ prefix: "gpuctl-sdk-home-" });
  try {
    const script = `${home}/train.py`;
    await Deno.writeTextFile(script, COLUMNS_SCRIPT);
    const python = async (env: Record<string, string>) => {
      const out = await new Deno.Command("python3", {
        args: [script],
        env: { PYTHONPATH: SDK, GPUCTL_HOME: home, ...env },
      }).output();
      assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
      return new TextDecoder().decode(out.stdout).trim();
    };
    const started = Date.now() / 1000;
    const live = await python({
      GPUCTL_SERVER_URL: `http://127.0.0.1:${server.addr.port}`,
      GPUCTL_TOKEN: h.tokens.write,
    });
    // The SDK sent columns, never rows.
    assertEquals(bodies.length > 0, true);
    assertEquals(bodies.some((b) => "points" in b), false);
    assertEquals(bodies.filter((b) => "columns" in b).length > 0, true);

    // The same script with no server: its spool holds columns; replayed as `gpuctl sync`
    // reads it, it is stored the same.
    const offline = await python({ GPUCTL_MODE: "offline" });
    const spool = parseSpoolFile(
      await Deno.readTextFile(`${home}/spool/${offline}.jsonl`),
      offline,
    );
    assertEquals(spool.refused, []);
    await h.call("POST", "/api/sdk/runs", { body: spool.registration });
    for (const batch of spool.batches) {
      const res = await h.call("POST", `/api/sdk/runs/${offline}/log`, { body: batch });
      assertEquals([res.status, res.json.refused], [200, undefined]);
    }

    // A run sent the same points as rows, as an older SDK sends them.
    const rows = (await h.call("POST", "/api/sdk/runs", { body: { project: "e2e" } })).json.id;
    const expected = columnsScriptPoints();
    const points = [...expected].flatMap(([key, list]) =>
      list.map(([step, value]) => ({ key, step, value, wall_time: started }))
    );
    for (let i = 0; i < points.length; i += 1000) {
      const res = await h.call("POST", `/api/sdk/runs/${rows}/log`, {
        body: { points: points.slice(i, i + 1000) },
      });
      assertEquals(res.status, 200);
    }

    const fromRows = await storedSeries(h, rows);
    for (const runId of [live, offline]) {
      const stored = await storedSeries(h, runId);
      for (const [key, list] of expected) {
        assertEquals(stored.get(key)!.points, list, `${runId} ${key}`);
        assertEquals(stored.get(key)!.points, fromRows.get(key)!.points);
        // Each point's wall time is when it was logged, kept as the SDK read it.
        for (const wall of stored.get(key)!.walls) {
          assertEquals(wall >= started - 1 && wall <= Date.now() / 1000 + 1, true, `${wall}`);
        }
      }
      const run = (await h.call("GET", `/api/runs/${runId}`)).json;
      assertEquals([run.status, run.step, run.dropped_points], ["SUCCEEDED", 1e15, 0]);
    }
  } finally {
    abort.abort();
    await server.finished;
    await h.close();
    await Deno.remove(home, { recursive: true });
  }
});
