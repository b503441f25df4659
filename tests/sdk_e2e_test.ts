/** The Python SDK against the real server: a script's points come back from the API. */
import { assertEquals } from "./assert.ts";
import { createHarness } from "./_harness.ts";

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
