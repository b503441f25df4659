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
