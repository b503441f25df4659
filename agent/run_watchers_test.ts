import { deepStrictEqual, match, strictEqual } from "node:assert/strict";
import { dispatchSpec } from "./_testing.ts";
import { RunWatchers } from "./run_watchers.ts";
import {
  eventFileBytes,
  fileVersionEvent,
  hparamsSessionEvent,
  summaryEvent,
} from "./tensorboard/_event_writer.ts";

async function withWorkingDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "run_watchers_test_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Writes (or appends) an event file with one scalar per `[tag, step, value]`. */
async function writeEvents(
  path: string,
  scalars: [string, number, number][],
  options: { append?: boolean; hparams?: Record<string, string | number | boolean> } = {},
): Promise<void> {
  await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  const events = options.append ? [] : [fileVersionEvent(1)];
  if (options.hparams) events.push(hparamsSessionEvent(1, options.hparams));
  for (const [tag, step, value] of scalars) {
    events.push(summaryEvent(step, 2, [{ tag, simpleValue: value }]));
  }
  await Deno.writeFile(path, eventFileBytes(events), { append: options.append });
}

const keyed = (points: { tag: string; step: number; value: number }[]) =>
  points.map((p) => `${p.tag}@${p.step}=${p.value}`).sort();

Deno.test("with no tensorboard_dir, a Lightning re-run in the same folder reads only its own version_N, keyed without it", async () => {
  await withWorkingDir(async (dir) => {
    // The previous run's files, there before the attempt starts.
    await writeEvents(`${dir}/lightning_logs/version_0/events.out.tfevents.100.vm.1.0`, [
      ["train_loss", 4, 2],
      ["train_loss", 9, 1],
    ]);
    const watchers = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null);
    await writeEvents(
      `${dir}/lightning_logs/version_1/events.out.tfevents.200.vm.2.0`,
      [["train_loss", 4, 0.5], ["epoch", 4, 0]],
      { hparams: { lr: 0.05, hidden: 16, ["x".repeat(201)]: 1 } },
    );
    const first = await watchers.poll();
    deepStrictEqual(keyed(first.points), ["epoch@4=0", "train_loss@4=0.5"]);
    deepStrictEqual(first.config, { lr: 0.05, hidden: 16 });
    strictEqual(first.epoch, 0);
    // Appended to the new file: read on; the hparams and epoch are not sent again unchanged.
    await writeEvents(
      `${dir}/lightning_logs/version_1/events.out.tfevents.200.vm.2.0`,
      [["val_loss", 15, 0.25], ["epoch", 15, 0]],
      { append: true },
    );
    const second = await watchers.poll();
    deepStrictEqual(keyed(second.points), ["epoch@15=0", "val_loss@15=0.25"]);
    strictEqual(second.config, null);
    strictEqual(second.epoch, null);
    // Bytes appended to a file that was there before are this attempt's too.
    await writeEvents(
      `${dir}/lightning_logs/version_0/events.out.tfevents.100.vm.1.0`,
      [["epoch", 20, 2]],
      { append: true },
    );
    const third = await watchers.poll();
    deepStrictEqual(keyed(third.points), ["epoch@20=2"]);
    strictEqual(third.epoch, 2);
    strictEqual(await watchers.missingEventFilesNote(), null);
  });
});

Deno.test("Transformers' dated folder, PyTorch's add_hparams timestamp and Keras's splits give the framework's keys", async () => {
  await withWorkingDir(async (dir) => {
    const watchers = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null);
    await writeEvents(`${dir}/out/runs/Dec02_01-18-45_vm/events.out.tfevents.300.vm.1.0`, [
      ["train/loss", 4, 0.7],
      ["train/epoch", 4, 1.5],
      ["eval/loss", 8, 0.6],
    ]);
    await writeEvents(
      `${dir}/runs/Dec02_01-18-46_vm/1796173826.32/events.out.tfevents.301.vm.2.1`,
      [
        ["hparam/final_loss", 0, 0.1],
      ],
      { hparams: { optimizer: "sgd" } },
    );
    await writeEvents(`${dir}/logs/train/events.out.tfevents.302.vm.3.0.v2`, [[
      "epoch_loss",
      0,
      1,
    ]]);
    await writeEvents(`${dir}/logs/validation/events.out.tfevents.303.vm.3.1.v2`, [
      ["epoch_loss", 0, 2],
    ]);
    const found = await watchers.finalPoll();
    deepStrictEqual(keyed(found.points), [
      "eval/loss@8=0.6000000238418579",
      "hparam/final_loss@0=0.10000000149011612",
      "train/epoch@4=1.5",
      "train/epoch_loss@0=1",
      "train/loss@4=0.699999988079071",
      "validation/epoch_loss@0=2",
    ]);
    deepStrictEqual(found.config, { optimizer: "sgd" });
    strictEqual(found.epoch, 1);
  });
});

Deno.test("a tensorboard_dir given with the job is followed as before, less its run-instance levels", async () => {
  await withWorkingDir(async (dir) => {
    const spec = dispatchSpec({ working_dir: dir, tensorboard_dir: "tb" });
    const watchers = await RunWatchers.create(spec, null);
    await writeEvents(`${dir}/tb/version_0/events.out.tfevents.1.vm.1.0`, [["val_loss", 3, 1]]);
    await writeEvents(`${dir}/tb/generator/events.out.tfevents.2.vm.1.0`, [["loss", 3, 2]]);
    // Outside the given folder: not followed.
    await writeEvents(`${dir}/runs/x/events.out.tfevents.3.vm.1.0`, [["loss", 3, 3]]);
    deepStrictEqual(keyed((await watchers.poll()).points), ["generator/loss@3=2", "val_loss@3=1"]);
  });
});

Deno.test("a run without event files where they were expected says why", async () => {
  await withWorkingDir(async (dir) => {
    // A tensorboard_dir that stayed empty.
    const explicit = await RunWatchers.create(
      dispatchSpec({ working_dir: dir, tensorboard_dir: "tb" }),
      null,
    );
    await explicit.finalPoll();
    match(
      (await explicit.missingEventFilesNote())!,
      /No TensorBoard event files .*\/tb during this run/,
    );

    // Event files written outside the folders gpuctl follows; an older one is not this run's.
    await writeEvents(`${dir}/old/events.out.tfevents.1.vm.1.0`, [["loss", 1, 1]]);
    await Deno.utime(`${dir}/old/events.out.tfevents.1.vm.1.0`, 1, 1);
    const stray = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null);
    strictEqual(await stray.missingEventFilesNote(), null);
    await writeEvents(`${dir}/results/tb/exp/events.out.tfevents.5.vm.1.0`, [["loss", 1, 1]]);
    await stray.finalPoll();
    const note = (await stray.missingEventFilesNote())!;
    match(note, /outside the folders gpuctl follows/);
    match(note, /--tb-dir results\/tb\/exp/);
    match(note, /their scalars: results\/tb\/exp\. /);
    await Deno.remove(`${dir}/results`, { recursive: true });

    // Lightning's folder written, with a CSV but no event file (no tensorboard installed).
    const csv = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null);
    await Deno.mkdir(`${dir}/lightning_logs/version_0`, { recursive: true });
    await Deno.writeTextFile(`${dir}/lightning_logs/version_0/metrics.csv`, "step,loss\n");
    await csv.finalPoll();
    match((await csv.missingEventFilesNote())!, /^lightning_logs\/version_0 was written/);

    await Deno.remove(`${dir}/lightning_logs`, { recursive: true });

    // A script that writes no TensorBoard files at all: nothing to say.
    const plain = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null);
    await Deno.writeTextFile(`${dir}/notes.txt`, "hello");
    await plain.finalPoll();
    strictEqual(await plain.missingEventFilesNote(), null);
  });
});

Deno.test("the agent's own runs folder inside a working dir is never a job's logs", async () => {
  await withWorkingDir(async (dir) => {
    const runsDir = `${dir}/agent-data/runs`;
    const watchers = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null, {
      ignore: [runsDir],
    });
    // Another run's folder, and an event file a job wrote into its GPUCTL_RUN_DIR.
    await Deno.mkdir(`${runsDir}/r-other/files`, { recursive: true });
    await writeEvents(`${runsDir}/r-other/files/events.out.tfevents.1.vm.1.0`, [["loss", 1, 1]]);
    await writeEvents(`${dir}/runs/Dec02_01-18-45_vm/events.out.tfevents.2.vm.1.0`, [
      ["loss", 2, 2],
    ]);
    deepStrictEqual(keyed((await watchers.finalPoll()).points), ["loss@2=2"]);

    const quiet = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null, {
      ignore: [runsDir],
    });
    await Deno.mkdir(`${runsDir}/r-next/files`, { recursive: true });
    await quiet.finalPoll();
    strictEqual(await quiet.missingEventFilesNote(), null);
  });
});

Deno.test("attempts sharing a working dir each keep the event files their own processes write", async () => {
  await withWorkingDir(async (dir) => {
    const spec = dispatchSpec({ working_dir: dir });
    const otherAttemptPid = (pid: number) => pid === 4242;
    const watchers = await RunWatchers.create(spec, null, { otherAttemptPid });
    // Another trial's writer (pid 4242) and this one's (pid 555), in the same runs/ folder.
    await writeEvents(`${dir}/runs/Dec02_01-18-45_vm/events.out.tfevents.10.vm.4242.0`, [
      ["loss", 1, 9],
    ]);
    await writeEvents(`${dir}/runs/Dec02_01-18-45_vm/events.out.tfevents.10.vm.555.0`, [
      ["loss", 1, 1],
    ]);
    deepStrictEqual(keyed((await watchers.poll()).points), ["loss@1=1"]);
    // Still turned down after growing, and after the agent restarts from the saved state.
    await writeEvents(
      `${dir}/runs/Dec02_01-18-45_vm/events.out.tfevents.10.vm.4242.0`,
      [["loss", 2, 9]],
      { append: true },
    );
    deepStrictEqual((await watchers.poll()).points, []);
    const resumed = await RunWatchers.create(spec, watchers.state(), {
      otherAttemptPid: () => false,
    });
    deepStrictEqual((await resumed.poll()).points, []);
  });
});

const FIXTURES = new URL("./checkpoints/testdata/", import.meta.url).pathname;

async function copyFixture(name: string, to: string): Promise<void> {
  await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
  await Deno.copyFile(`${FIXTURES}${name}`, to);
}

Deno.test("with no checkpoint_dir, the working dir is searched: a Lightning re-run's new checkpoint is the run's, the old one is not", async () => {
  await withWorkingDir(async (dir) => {
    // The previous run's checkpoint and files that are never checkpoints of a run.
    await copyFixture(
      "epoch=2-step=21.ckpt",
      `${dir}/lightning_logs/version_0/checkpoints/epoch=2-step=21.ckpt`,
    );
    await copyFixture("torch_dict.pt", `${dir}/node_modules/pkg/model.pt`);
    const watchers = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null, {
      ignore: [`${dir}/agent-runs`],
    });
    await copyFixture(
      "epoch=2-step=21.ckpt",
      `${dir}/lightning_logs/version_1/checkpoints/epoch=2-step=21.ckpt`,
    );
    await copyFixture("torch_dict.pt", `${dir}/node_modules/pkg/other.pt`);
    await copyFixture("torch_dict.pt", `${dir}/agent-runs/r-1/files/ckpt.pt`);
    // A poll while the job runs: the scan interval has not passed again by its end.
    await watchers.poll();
    await copyFixture("model-03.keras", `${dir}/model-03.keras`);
    const end = await watchers.finalPoll();
    deepStrictEqual(
      end.checkpoints.map((c) => [c.path.slice(dir.length), c.state, c.step, c.epoch]).sort(),
      [
        ["/lightning_logs/version_1/checkpoints/epoch=2-step=21.ckpt", "valid", 21, 2],
        ["/model-03.keras", "valid", null, 3],
      ],
    );
  });
});

Deno.test("a working dir larger than one scan lists is searched in part, and nothing it did not reach is called gone", async () => {
  await withWorkingDir(async (dir) => {
    await copyFixture("torch_dict.pt", `${dir}/zz/ckpt-1.pt`);
    const watchers = await RunWatchers.create(dispatchSpec({ working_dir: dir }), null);
    // Then the job writes more files than one scan lists, in folders searched before `zz/`.
    for (let i = 0; i < 60; i++) {
      const sub = `${dir}/a${String(i).padStart(2, "0")}`;
      await Deno.mkdir(sub);
      for (let j = 0; j < 90; j++) await Deno.writeTextFile(`${sub}/f${j}.txt`, "x");
    }
    await copyFixture("torch_dict.pt", `${dir}/a00/ckpt-2.pt`);
    const end = await watchers.finalPoll();
    deepStrictEqual(end.checkpoints.map((c) => [c.path.slice(dir.length), c.state]), [
      ["/a00/ckpt-2.pt", "valid"],
    ]);
  });
});
