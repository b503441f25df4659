/**
 * The zero-change promise with the real frameworks: each example in examples/frameworks runs
 * as a gpuctl job with nothing but its command, and the run holds every scalar TensorBoard's
 * own reader finds in the files the framework wrote (same keys, steps and values), its
 * hparams as config and its epoch, and every checkpoint the script left in its working dir
 * (and no other) as a valid checkpoint of the run. The SDK callbacks are held to what the same trainer's own
 * TensorBoard writer logs (and, for Transformers, `trainer.state.log_history`).
 *
 * Needs the framework virtualenv (.ci/framework-venv); ignored with the reason without it.
 */
import { assert, assertEquals } from "./assert.ts";
import { frameworkPython } from "./_frameworks.ts";
import { api, startCluster, until } from "./_processes.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const READER = `${ROOT}tests/frameworks/read_events.py`;
const FRAMEWORKS = frameworkPython();
/** One job of the tier, under a loaded CI machine: framework imports take most of it. */
const JOB_TIMEOUT_MS = 540_000;

type Call = ReturnType<typeof api>;
type Value = number | string;
/** key → step → value. */
type Points = Map<string, Map<number, Value>>;

interface TensorBoardRun {
  scalars: Record<string, [number, Value][]>;
  hparams: Record<string, string | number | boolean | null>;
}

/** What TensorBoard's EventAccumulator reads under `dir`, by run folder. */
async function readTensorBoard(dir: string): Promise<Record<string, TensorBoardRun>> {
  const out = await new Deno.Command(FRAMEWORKS.python!, {
    args: [READER, dir],
    stdout: "piped",
    stderr: "piped",
    env: { TF_CPP_MIN_LOG_LEVEL: "3" },
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert(out.success, `read_events.py failed: ${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(text);
}

/**
 * TensorBoard's scalars as one run's points: a `train` or `validation` run folder (Keras)
 * names the split, so it leads the key, as TensorBoard shows it; the last value of a (key,
 * step) wins, as in the store.
 */
function expectedPoints(runs: Record<string, TensorBoardRun>, leaveOut: string[] = []): Points {
  const points: Points = new Map();
  for (const [folder, run] of Object.entries(runs)) {
    const last = folder.split("/").at(-1)!;
    const split = last === "train" || last === "validation" ? `${last}/` : "";
    for (const [tag, values] of Object.entries(run.scalars)) {
      if (leaveOut.includes(tag)) continue;
      const key = split + tag;
      if (!points.has(key)) points.set(key, new Map());
      for (const [step, value] of values) points.get(key)!.set(step, value);
    }
  }
  return points;
}

function hparamsOf(runs: Record<string, TensorBoardRun>): Record<string, unknown> {
  return Object.assign({}, ...Object.values(runs).map((run) => run.hparams));
}

/** Every point of a run except the agent's system metrics. */
async function runPoints(call: Call, runId: string): Promise<Points> {
  const keys = (await call("GET", `/api/runs/${runId}/metrics`)).json.keys
    .map((k: { key: string }) => k.key)
    .filter((key: string) => !key.startsWith("sys/"));
  const points: Points = new Map();
  for (const key of keys) {
    const steps = new Map<number, Value>();
    let cursor: string | null = null;
    do {
      const query: string = `key=${encodeURIComponent(key)}` + (cursor ? `&cursor=${cursor}` : "");
      const page = (await call("GET", `/api/runs/${runId}/metrics/points?${query}`)).json;
      page.steps.forEach((step: number, i: number) => steps.set(step, page.values[i]));
      cursor = page.next_cursor;
    } while (cursor !== null);
    points.set(key, steps);
  }
  return points;
}

/** `got` has exactly `expected`'s keys and steps, and values equal within `relative`. */
function assertSamePoints(what: string, got: Points, expected: Points, relative = 0): void {
  assertEquals([...got.keys()].sort(), [...expected.keys()].sort(), `${what}: keys`);
  for (const [key, steps] of expected) {
    const have = got.get(key)!;
    assertEquals(
      [...have.keys()].sort((a, b) => a - b),
      [...steps.keys()].sort((a, b) => a - b),
      `${what}: steps of ${key}`,
    );
    for (const [step, value] of steps) {
      const actual = have.get(step)!;
      const close = typeof value === "number" && typeof actual === "number"
        ? Math.abs(actual - value) <= relative * Math.max(1, Math.abs(value))
        : actual === value;
      assert(close, `${what}: ${key} at step ${step} is ${actual}, TensorBoard has ${value}`);
    }
  }
}

function assertConfig(what: string, config: Record<string, unknown>, expected: object): void {
  for (const [name, value] of Object.entries(expected)) {
    assertEquals(config[name], value, `${what}: config.${name}`);
  }
  assertEquals(Object.keys(config).sort(), Object.keys(expected).sort(), `${what}: config keys`);
}

interface Case {
  name: string;
  script: string;
  /** Arguments after the script; `OUT` stands for a folder outside the working dir. */
  args: string[];
  keys: string[];
  epoch: number | null;
  /** The callback cases: the framework's own TensorBoard files (in OUT) are the oracle. */
  callback?: { relative: number; leaveOut: string[] };
}

const CASES: Case[] = [
  {
    name: "pytorch",
    script: "pytorch/train.py",
    args: [],
    keys: ["eval/loss", "hparam/final_loss", "train/loss"],
    epoch: null,
  },
  {
    name: "lightning",
    script: "lightning/train.py",
    args: [],
    keys: ["epoch", "hp_metric", "train_loss", "val_loss"],
    epoch: 2,
  },
  {
    name: "lightning-callback",
    script: "lightning/train.py",
    args: ["--gpuctl-callback", "--logger-dir", "OUT"],
    keys: ["epoch", "train_loss", "val_loss"],
    epoch: 2,
    // hp_metric is written by TensorBoardLogger itself, not logged through the trainer. The
    // SDK sends float64 where TensorBoard keeps float32.
    callback: { relative: 1e-6, leaveOut: ["hp_metric"] },
  },
  {
    name: "transformers",
    script: "transformers/train.py",
    args: [],
    keys: [
      "eval/loss",
      "eval/runtime",
      "eval/samples_per_second",
      "eval/steps_per_second",
      "train/epoch",
      "train/grad_norm",
      "train/learning_rate",
      "train/loss",
      "train/total_flos",
      "train/train_loss",
      "train/train_runtime",
      "train/train_samples_per_second",
      "train/train_steps_per_second",
    ],
    epoch: 2,
  },
  {
    name: "transformers-callback",
    script: "transformers/train.py",
    args: ["--gpuctl-callback", "--logging-dir", "OUT", "--log-history", "OUT/log_history.json"],
    keys: [], // as the TensorBoard case
    epoch: 2,
    callback: { relative: 1e-6, leaveOut: [] },
  },
  {
    name: "keras",
    script: "keras/train.py",
    args: [],
    keys: [
      "train/epoch_accuracy",
      "train/epoch_learning_rate",
      "train/epoch_loss",
      "validation/epoch_accuracy",
      "validation/epoch_loss",
      "validation/evaluation_accuracy_vs_iterations",
      "validation/evaluation_loss_vs_iterations",
    ],
    epoch: null,
  },
];

async function submit(call: Call, name: string, workingDir: string, argv: string[]) {
  const res = await call("POST", "/api/jobs", {
    name,
    command: [FRAMEWORKS.python!, ...argv],
    working_dir: workingDir,
    gpus: 0,
    max_attempts: 1,
  });
  assertEquals(res.status, 201, res.text);
  return res.json;
}

async function finished(call: Call, id: string) {
  return await until(
    async () => {
      const j = (await call("GET", `/api/jobs/${id}`)).json;
      return ["SUCCEEDED", "FAILED", "CANCELLED", "LOST"].includes(j.status) ? j : null;
    },
    JOB_TIMEOUT_MS,
    `job ${id} finished`,
  );
}

async function tail(call: Call, runId: string): Promise<string> {
  const lines = (await call("GET", `/api/runs/${runId}/logs?limit=40`)).json.lines;
  return lines.map((l: { text: string }) => l.text).join("\n");
}

/**
 * The checkpoints a script left under `dir`, as a user would list them: `.pt`, `.ckpt` and
 * `.keras` files, and the Trainer's `checkpoint-N` folders (not what is inside them).
 */
async function checkpointsOnDisk(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (folder: string) => {
    for await (const entry of Deno.readDir(folder)) {
      const path = `${folder}/${entry.name}`;
      if (entry.name.startsWith(".")) continue;
      if (entry.isDirectory && /^checkpoint-\d+$/.test(entry.name)) found.push(path);
      else if (entry.isDirectory) await walk(path);
      else if (/\.(pt|ckpt|keras)$/.test(entry.name)) found.push(path);
    }
  };
  await walk(dir);
  return found.sort();
}

/** The run's valid checkpoints are exactly the ones on disk under `dirs`. */
async function assertCheckpoints(what: string, call: Call, runId: string, ...dirs: string[]) {
  const items: { path: string; state: string }[] =
    (await call("GET", `/api/runs/${runId}/checkpoints`)).json.items;
  const onDisk = (await Promise.all(dirs.map(checkpointsOnDisk))).flat().sort();
  assertEquals(
    items.filter((c) => c.state === "valid").map((c) => c.path).sort(),
    onDisk,
    `${what}: the run's valid checkpoints are the files on disk`,
  );
}

/** What the run holds once its last frames are in (the job's end is applied after them). */
async function checkCase(call: Call, c: Case, job: { run_id: string }, dirs: {
  work: string;
  out: string;
}) {
  const run = (await call("GET", `/api/runs/${job.run_id}`)).json;
  const got = await runPoints(call, job.run_id);
  const events = (await call("GET", `/api/events?run_id=${job.run_id}&type=TENSORBOARD_MISSING`))
    .json.items;
  assertEquals(events, [], `${c.name}: no warning about missing event files`);
  if (!c.callback) {
    const tensorboard = await readTensorBoard(dirs.work);
    assertEquals([...got.keys()].sort(), c.keys, `${c.name}: keys`);
    assertSamePoints(c.name, got, expectedPoints(tensorboard));
    assertConfig(c.name, run.config, hparamsOf(tensorboard));
  } else {
    const tensorboard = await readTensorBoard(dirs.out);
    assertSamePoints(
      c.name,
      got,
      expectedPoints(tensorboard, c.callback.leaveOut),
      c.callback.relative,
    );
  }
  if (c.keys.length) assertEquals([...got.keys()].sort(), c.keys, `${c.name}: keys`);
  assertEquals(run.epoch, c.epoch, `${c.name}: epoch`);
  // A callback logs the trainer's checkpoints wherever they are (the Lightning case's are
  // outside the working dir), and reports the ones the trainer deleted as gone.
  if (c.callback) await assertCheckpoints(c.name, call, job.run_id, dirs.work, dirs.out);
  else await assertCheckpoints(c.name, call, job.run_id, dirs.work);
  return { run, got };
}

Deno.test({
  name:
    "framework scripts run with only their command: every TensorBoard scalar, hparams, epoch and checkpoint on the run; the callbacks log what the trainer logs" +
    (FRAMEWORKS.python ? "" : ` (${FRAMEWORKS.reason})`),
  ignore: FRAMEWORKS.python === null,
  async fn() {
    const cluster = await startCluster({ fakeGpus: 1, prefix: "gpuctl-frameworks-" });
    try {
      const call = cluster.call;
      const dirsOf = (name: string) => ({
        work: `${cluster.home}/work/${name}`,
        out: `${cluster.home}/outside/${name}`,
      });
      // All at once: each job spends most of its time importing its framework.
      const jobs = await Promise.all(CASES.map(async (c) => {
        const dirs = dirsOf(c.name);
        await Deno.mkdir(dirs.work, { recursive: true });
        await Deno.mkdir(dirs.out, { recursive: true });
        const args = c.args.map((a) => a.replace(/^OUT/, dirs.out));
        return await submit(call, c.name, dirs.work, [
          `${ROOT}examples/frameworks/${c.script}`,
          ...args,
        ]);
      }));
      const results = new Map<string, Awaited<ReturnType<typeof checkCase>>>();
      for (const [i, c] of CASES.entries()) {
        const done = await finished(call, jobs[i].id);
        assertEquals(done.status, "SUCCEEDED", `${c.name}: ${await tail(call, done.run_id)}`);
        results.set(c.name, await checkCase(call, c, done, dirsOf(c.name)));
      }

      // The Transformers callback: the keys of the Trainer's own TensorBoard files, and the
      // values of trainer.state.log_history exactly, at its steps.
      const hf = results.get("transformers-callback")!;
      assertEquals([...hf.got.keys()].sort(), [...results.get("transformers")!.got.keys()].sort());
      const history: Record<string, number>[] = JSON.parse(
        await Deno.readTextFile(`${dirsOf("transformers-callback").out}/log_history.json`),
      );
      for (const entry of history) {
        for (const [name, value] of Object.entries(entry)) {
          if (name === "step" || typeof value !== "number") continue;
          const key = name.startsWith("eval_")
            ? `eval/${name.slice(5)}`
            : name.startsWith("test_")
            ? `test/${name.slice(5)}`
            : `train/${name}`;
          assertEquals(hf.got.get(key)?.get(entry.step), value, `log_history ${key}@${entry.step}`);
        }
      }
      assertEquals(hf.run.config.learning_rate, 0.001, "TrainingArguments as config");
      assertConfig("lightning-callback", results.get("lightning-callback")!.run.config, {
        lr: 0.05,
        hidden: 16,
      });

      // Lightning again in the same folder (2 epochs this time): version_1 is this run's,
      // version_0 stays the first run's.
      const again = dirsOf("lightning");
      const rerun = await finished(
        call,
        (await submit(call, "lightning-again", again.work, [
          `${ROOT}examples/frameworks/lightning/train.py`,
          "--epochs",
          "2",
        ])).id,
      );
      assertEquals(rerun.status, "SUCCEEDED", await tail(call, rerun.run_id));
      const second = await readTensorBoard(`${again.work}/lightning_logs/version_1`);
      const got = await runPoints(call, rerun.run_id);
      assertSamePoints("lightning re-run", got, expectedPoints(second));
      assertEquals(Math.max(...got.get("train_loss")!.keys()), 29);
      assertEquals((await call("GET", `/api/runs/${rerun.run_id}`)).json.epoch, 1);
      // Its checkpoints are version_1's; version_0's stay the first run's.
      await assertCheckpoints(
        "lightning re-run",
        call,
        rerun.run_id,
        `${again.work}/lightning_logs/version_1`,
      );
      await assertCheckpoints(
        "lightning, after the re-run",
        call,
        results.get("lightning")!.run.id,
        `${again.work}/lightning_logs/version_0`,
      );
    } finally {
      await cluster.stop();
    }
  },
});
