/**
 * Checkpoints written by real `torch.save` in jobs run by the real agent and server: a retry
 * and a re-run that write the same names in the same folder, and a save cut short. What a
 * user would check: each run lists the files it wrote, the older records say `overwritten`,
 * and no recommendation names a file that holds another run's weights or cannot be loaded.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { startCluster, until, waitJob } from "./_processes.ts";
import { frameworkPython } from "./_frameworks.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const python = frameworkPython();
const ignore = python.python === null;
const name = (what: string) => ignore ? `${what} (skipped: ${python.reason})` : what;

/**
 * Trains a tiny torch model and saves `ckpt-<step>.pt` every 50 steps up to `--until`, logging
 * its loss through the SDK; `--die-after` SIGKILLs itself after that step's save (attempt 1 of
 * a job killed mid-training); `--cut` writes the save of that step only half (a full disk).
 */
const TRAIN = `
import argparse, io, os, signal
import torch
from gpuctl import run

p = argparse.ArgumentParser()
p.add_argument("--until", type=int, required=True)
p.add_argument("--seed", type=int, required=True)
p.add_argument("--die-after", type=int)
p.add_argument("--cut", type=int)
a = p.parse_args()
if os.environ.get("GPUCTL_ATTEMPT") == "2":  # the retry of a killed attempt lives to 200
    a.until, a.seed, a.die_after = 200, 2, None
torch.manual_seed(a.seed)
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
x, y = torch.randn(64, 8), torch.randn(64, 1)
os.makedirs("ckpt", exist_ok=True)
for step in range(1, a.until + 1):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    run.log({"train/loss": loss.item()}, step=step)
    if step % 50 == 0:
        state = {"step": step, "seed": a.seed, "model": model.state_dict()}
        path = f"ckpt/ckpt-{step}.pt"
        if step == a.cut:
            buf = io.BytesIO(); torch.save(state, buf)
            open(path, "wb").write(buf.getvalue()[: len(buf.getvalue()) // 2])
            raise OSError(28, "No space left on device")
        torch.save(state, path)
        if step == a.die_after:
            run.finish()
            os.kill(os.getpid(), signal.SIGKILL)
run.finish()
`;

interface Ckpt {
  id: string;
  path: string;
  step: number;
  state: string;
  overwritten_by_run: string | null;
  problem: string | null;
  fingerprint: string | null;
}

type Cluster = Awaited<ReturnType<typeof startCluster>>;

async function checkpointsOf(c: Cluster, runId: string, count: number): Promise<Ckpt[]> {
  return await until<Ckpt[] | false>(
    async () => {
      const items = (await c.call("GET", `/api/runs/${runId}/checkpoints`)).json.items as Ckpt[];
      return items.length >= count ? items : false;
    },
    20_000,
    `${count} checkpoints of run ${runId}`,
  ) as Ckpt[];
}

async function submit(c: Cluster, jobName: string, dir: string, args: string[]) {
  const res = await c.call("POST", "/api/jobs", {
    name: jobName,
    command: [python.python!, "train.py", ...args],
    working_dir: dir,
    gpus: 1,
    max_attempts: 1,
    checkpoint_dir: "ckpt",
  });
  assertEquals(res.status, 201, res.text);
  return res.json;
}

/** `gpuctl checkpoint recommend --run RUN` as a user types it; what it printed. */
async function cliRecommend(c: Cluster, runId: string): Promise<string> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "cli/main.ts", "checkpoint", "recommend", "--run", runId],
    cwd: ROOT,
    env: {
      NO_COLOR: "1",
      GPUCTL_SERVER_URL: c.server.url,
      GPUCTL_TOKEN: c.server.adminToken,
      GPUCTL_HOME: `${c.home}/cli`,
    },
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assertEquals(out.code, 0, text);
  return text;
}

/** The seed a checkpoint file holds, read back with torch.load: whose weights it has. */
async function seedIn(path: string): Promise<number> {
  const out = await new Deno.Command(python.python!, {
    args: ["-c", `import torch; print(torch.load(${JSON.stringify(path)})["seed"])`],
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  return Number(new TextDecoder().decode(out.stdout).trim());
}

Deno.test({
  name: name(
    "a retry writing the same checkpoint names: attempt 2 has all four, attempt 1's are overwritten and never recommended",
  ),
  ignore,
  async fn() {
    const c = await startCluster({ fakeGpus: 1, prefix: "gpuctl-e2e-ckpt-" });
    try {
      const dir = `${c.home}/work`;
      await Deno.mkdir(dir);
      await Deno.writeTextFile(`${dir}/train.py`, TRAIN);
      // Attempt 1 saves 50, 100, 150 and is killed; it is retried into the same folder.
      const job = await submit(c, "retry", dir, [
        "--until",
        "150",
        "--seed",
        "1",
        "--die-after",
        "150",
      ]);
      const failed = await waitJob(c.call, job.id, ["FAILED"], 60_000);
      const first = failed.run_id;
      assertEquals((await checkpointsOf(c, first, 3)).map((k) => [k.step, k.state]), [
        [50, "valid"],
        [100, "valid"],
        [150, "valid"],
      ]);
      // The retry runs the same command; this time it lives to 200 (another seed: its weights).
      const retried = await c.call("POST", `/api/jobs/${job.id}/retry`, {});
      assertEquals(retried.status, 200, retried.text);
      const done = await waitJob(c.call, job.id, ["SUCCEEDED"], 60_000);
      const second = done.run_id;
      assert(second !== first, "the retry is a new run");

      const mine = await checkpointsOf(c, second, 4);
      assertEquals(mine.map((k) => [k.step, k.state]), [
        [50, "valid"],
        [100, "valid"],
        [150, "valid"],
        [200, "valid"],
      ]);
      const old = await checkpointsOf(c, first, 3);
      assertEquals(
        old.map((k) => [k.step, k.state, k.overwritten_by_run]),
        [[50, "overwritten", second], [100, "overwritten", second], [150, "overwritten", second]],
      );
      // The files hold attempt 2's weights now.
      assertEquals(await seedIn(`${dir}/ckpt/ckpt-150.pt`), 2);

      const rec = (await c.call("GET", `/api/checkpoints:recommend?run=${first}`)).json;
      assertEquals(rec.checkpoint, null);
      assertEquals(rec.skipped.length, 3);
      for (const s of rec.skipped) assertStringIncludes(s.why, `overwritten by run ${second}`);
      const text = await cliRecommend(c, first);
      assertStringIncludes(text, "No checkpoint to recommend");
      assertStringIncludes(text, `overwritten by run ${second}`);

      const ok = (await c.call("GET", `/api/checkpoints:recommend?run=${second}`)).json;
      assert(mine.some((k) => k.id === ok.checkpoint.checkpoint_id), JSON.stringify(ok));
      assertEquals(ok.skipped, []);
    } finally {
      await c.stop();
    }
  },
});

Deno.test({
  name: name(
    "a re-run in the same folder takes the files it writes again; a save cut short is listed incomplete and never recommended",
  ),
  ignore,
  async fn() {
    const c = await startCluster({ fakeGpus: 1, prefix: "gpuctl-e2e-ckpt-" });
    try {
      const dir = `${c.home}/work`;
      await Deno.mkdir(dir);
      await Deno.writeTextFile(`${dir}/train.py`, TRAIN);
      const a = await submit(c, "first", dir, ["--until", "150", "--seed", "1"]);
      const runA = (await waitJob(c.call, a.id, ["SUCCEEDED"], 60_000)).run_id;
      await checkpointsOf(c, runA, 3);
      // The same script again, in the same folder; the disk fills during the save at 100.
      const b = await submit(c, "again", dir, ["--until", "150", "--seed", "2", "--cut", "100"]);
      const runB = (await waitJob(c.call, b.id, ["FAILED"], 60_000)).run_id;
      const bs = await checkpointsOf(c, runB, 2);
      assertEquals(bs.map((k) => [k.step, k.state]), [[50, "valid"], [100, "incomplete"]]);
      assertStringIncludes(bs[1].problem!, "the zip was cut short");
      const as = await checkpointsOf(c, runA, 3);
      assertEquals(as.map((k) => [k.step, k.state]), [
        [50, "overwritten"],
        [100, "overwritten"],
        [150, "valid"], // not written again: still run A's
      ]);
      const recA = (await c.call("GET", `/api/checkpoints:recommend?run=${runA}`)).json;
      assertEquals(recA.checkpoint.checkpoint_id, as[2].id);
      assertEquals(recA.skipped.length, 2);
      const recB = (await c.call("GET", `/api/checkpoints:recommend?run=${runB}`)).json;
      assertEquals(recB.checkpoint.checkpoint_id, bs[0].id);
      assertEquals(recB.skipped.map((s: { checkpoint_id: string }) => s.checkpoint_id), [bs[1].id]);
      assertStringIncludes(recB.skipped[0].why, "incomplete");
      const evaluate = await c.call("POST", `/api/checkpoints/${bs[1].id}/evaluations`, {
        suite: "heldout",
        command: ["true"],
      });
      assertEquals(evaluate.status, 409, evaluate.text);
    } finally {
      await c.stop();
    }
  },
});

/**
 * Lightning as a user writes it, keeping its 2 best checkpoints and `last.ckpt`; each epoch
 * ends a few seconds apart so every file lives long enough to be seen before Lightning deletes it.
 */
const LIGHTNING = `
import time
import torch
import lightning as L
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from gpuctl import run

class Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(4, 1)
    def training_step(self, batch, _):
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("train_loss", loss, on_epoch=True, on_step=False)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)

class Report(Callback):
    def on_train_epoch_end(self, trainer, module):
        run.log({"train/loss": float(trainer.callback_metrics["train_loss"])}, step=trainer.global_step)
        time.sleep(4)

torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(28, 4), torch.randn(28, 1))
keep = ModelCheckpoint(dirpath="ckpt", save_top_k=2, monitor="train_loss", mode="min", save_last=True)
trainer = L.Trainer(max_epochs=4, callbacks=[Report(), keep], logger=False,
                    enable_progress_bar=False, enable_model_summary=False)
trainer.fit(Tiny(), torch.utils.data.DataLoader(data, batch_size=4))
run.finish()
`;

Deno.test({
  name: name(
    "Lightning's save_top_k: the checkpoints it deleted are gone, the rest valid, last.ckpt has its step",
  ),
  ignore,
  async fn() {
    const c = await startCluster({ fakeGpus: 1, prefix: "gpuctl-e2e-ckpt-" });
    try {
      const dir = `${c.home}/work`;
      await Deno.mkdir(dir);
      await Deno.writeTextFile(`${dir}/train.py`, LIGHTNING);
      const job = await submit(c, "lightning", dir, []);
      const runId = (await waitJob(c.call, job.id, ["SUCCEEDED"], 120_000)).run_id;
      const onDisk = [...Deno.readDirSync(`${dir}/ckpt`)].map((e) => e.name).sort();
      assertEquals(onDisk, ["epoch=2-step=21.ckpt", "epoch=3-step=28.ckpt", "last.ckpt"]);
      const listed = await until(
        async () => {
          const items = (await c.call("GET", `/api/runs/${runId}/checkpoints`)).json
            .items as Ckpt[];
          return items.filter((k) => k.state === "gone").length === 2 ? items : false;
        },
        20_000,
        "two checkpoints gone",
      ) as Ckpt[];
      const base = (k: Ckpt) => k.path.slice(k.path.lastIndexOf("/") + 1);
      assertEquals(
        listed.map((k) => [base(k), k.step, k.state]).sort(),
        [
          ["epoch=0-step=7.ckpt", 7, "gone"],
          ["epoch=1-step=14.ckpt", 14, "gone"],
          ["epoch=2-step=21.ckpt", 21, "valid"],
          ["epoch=3-step=28.ckpt", 28, "valid"],
          ["last.ckpt", 28, "valid"],
        ],
      );
      const rec = (await c.call("GET", `/api/checkpoints:recommend?run=${runId}`)).json;
      assert(onDisk.includes(base(rec.checkpoint)), JSON.stringify(rec.checkpoint));
      assertEquals(
        rec.skipped.map((s: { why: string }) => s.why.split(":")[0]),
        ["gone", "gone"],
      );
    } finally {
      await c.stop();
    }
  },
});
