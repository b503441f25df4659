/**
 * gpuctl stopped and started again under a running job (`deno task start`, the server with
 * its local agent): the job keeps running, its SDK keeps what it cannot send in the run's
 * folder, and every point and checkpoint of the run arrives exactly once.
 */
import { assert, assertEquals } from "./assert.ts";
import { api, type Proc, spawnDeno, taskArgs, until } from "./_processes.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const STEPS = 1500;
const EVAL_EVERY = 50;
const CKPT_EVERY = 250;

async function startGpuctl(home: string): Promise<{ proc: Proc; call: ReturnType<typeof api> }> {
  const proc = spawnDeno([...taskArgs("start"), "--port", "0", "--fake-gpus", "1"], {
    GPUCTL_HOME: home,
  });
  const [, url] = await proc.waitFor(/console at (http:\/\/[0-9.]+:\d+)\//);
  const config = await Deno.readTextFile(`${home}/server.yaml`);
  const call = api(url, /admin_token: (\S+)/.exec(config)![1]);
  await until(
    async () => (await call("GET", "/api/nodes")).json.items?.[0]?.status === "ONLINE",
    30_000,
    "the local agent online",
  );
  return { proc, call };
}

Deno.test("a job's SDK data survives gpuctl being stopped and started again under it, each point once", async () => {
  const home = await Deno.makeTempDir({ prefix: "gpuctl-restart-" });
  let gpuctl = await startGpuctl(home);
  try {
    const job = (await gpuctl.call("POST", "/api/jobs", {
      name: "restart",
      command: [
        "python3",
        `${ROOT}/examples/synthetic/train.py`,
        "--steps",
        String(STEPS),
        "--sleep",
        "0.004",
        "--eval-every",
        String(EVAL_EVERY),
        "--ckpt-every",
        String(CKPT_EVERY),
      ],
      working_dir: home,
      gpus: 1,
    })).json;
    const run = await until(
      async () => {
        const j = (await gpuctl.call("GET", `/api/jobs/${job.id}`)).json;
        if (!j.run_id) return null;
        const r = (await gpuctl.call("GET", `/api/runs/${j.run_id}`)).json;
        return r.step >= 100 ? r : null;
      },
      30_000,
      "the first points",
    );
    const stopped = await gpuctl.proc.kill("SIGTERM");
    assertEquals(stopped.code, 0, gpuctl.proc.output());
    // While nothing listens the SDK keeps its batches in the run's own folder.
    const files = `${home}/agent/runs/${run.id}/files`;
    await until(() => exists(`${files}/.gpuctl/${run.id}.jsonl`), 15_000, "the SDK's journal");
    gpuctl = await startGpuctl(home);
    const done = await until(
      async () => {
        const j = (await gpuctl.call("GET", `/api/jobs/${job.id}`)).json;
        return ["SUCCEEDED", "FAILED", "CANCELLED", "LOST"].includes(j.status) ? j : null;
      },
      30_000,
      "the job's end",
    );
    assertEquals(done.status, "SUCCEEDED");
    assertEquals(done.run_id, run.id, "the same attempt, reattached");
    const evalSteps = Math.ceil(STEPS / EVAL_EVERY) + ((STEPS - 1) % EVAL_EVERY === 0 ? 0 : 1);
    const ckptSteps = Math.floor((STEPS - 1) / CKPT_EVERY) + ((STEPS - 1) % CKPT_EVERY ? 1 : 0);
    const counts = await until(
      async () => {
        const q = (await gpuctl.call("POST", "/api/runs/metrics:query", {
          runs: [run.id],
          keys: ["train/loss", "eval/loss", "eval/accuracy"],
        })).json;
        const n = Object.fromEntries(
          q.series.map((s: { key: string; steps: number[] }) => [s.key, s.steps.length]),
        );
        return n["train/loss"] === STEPS && n["eval/loss"] === evalSteps ? n : null;
      },
      15_000,
      "every point",
    );
    assertEquals(counts, {
      "train/loss": STEPS,
      "eval/loss": evalSteps,
      "eval/accuracy": evalSteps,
    });
    const checkpoints = (await gpuctl.call("GET", `/api/runs/${run.id}/checkpoints`)).json.items;
    assertEquals(checkpoints.length, ckptSteps);
    // The example wrote them in the run's own folder, not in the shared working dir.
    assert(checkpoints.every((c: { path: string }) => c.path.startsWith(`${files}/checkpoints/`)));
    const stored = (await gpuctl.call("GET", `/api/runs/${run.id}`)).json;
    assertEquals([stored.step, stored.dropped_points], [STEPS - 1, 0]);
    assert(!await exists(`${files}/.gpuctl/${run.id}.jsonl`), "the journal is gone once sent");
  } finally {
    await gpuctl.proc.kill("SIGTERM");
    await Deno.remove(home, { recursive: true });
  }
});

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}
