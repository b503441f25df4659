// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * Hyperparameter search on one objective and one budget: the synthetic example's final
 * eval/loss over `--lr` (log-uniform 0.003–1), N trials of at most 120 steps, one trial at a
 * time, compared at steps 40 and 80 keeping the better half. gpuctl: a random sweep with early
 * stopping, run as real jobs on a real server and an agent with fake GPUs; Optuna (its default
 * TPE sampler) with SuccessiveHalvingPruner and with HyperbandPruner; Ray Tune with ASHA.
 * Each over the same seeds: the best final value, and the trial-seconds until the running best
 * was within 1 % of it.
 */
import { startCluster, until } from "../../tests/_processes.ts";
import type { Report } from "../report.ts";
import { median, num, type SearchOutcome, searchOutcome, spread, type Trial } from "./summary.ts";

const HERE = new URL(".", import.meta.url).pathname;
const ROOT = new URL("../..", import.meta.url).pathname;

export interface SearchShape {
  seeds: number[];
  trials: number;
  steps: number;
  /** Seconds a step sleeps (the trial's "training"). */
  sleep: number;
}

/** Shared by every tool: the range, the eval cadence and the rungs. */
const LR = { min: 0.003, max: 1 };
const EVAL_EVERY = 10;
const MIN_STEPS = 40;

interface SearchRun {
  outcome: SearchOutcome;
  wallS: number;
}

function pythonArgs(shape: SearchShape): string[] {
  return [
    "--trials",
    String(shape.trials),
    "--steps",
    String(shape.steps),
    "--eval-every",
    String(EVAL_EVERY),
    "--min-steps",
    String(MIN_STEPS),
    "--sleep",
    String(shape.sleep),
    "--lr-min",
    String(LR.min),
    "--lr-max",
    String(LR.max),
  ];
}

async function peerSearch(python: string, args: string[]): Promise<SearchRun> {
  const out = await new Deno.Command(python, {
    args: [`${HERE}/search.py`, ...args],
    stdout: "piped",
    stderr: "piped",
    env: { RAY_DEDUP_LOGS: "0", TUNE_DISABLE_AUTO_CALLBACK_LOGGERS: "1" },
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`search.py ${args[0]}: ${new TextDecoder().decode(out.stderr).slice(-1500)}`);
  }
  const r = JSON.parse(stdout.trim().split("\n").filter((l) => l.startsWith("{")).at(-1)!);
  return { outcome: searchOutcome(r.trials as Trial[]), wallS: r.wall_s };
}

const medianOr = (xs: (number | null)[]) => median(xs) ?? NaN;

type Call = Awaited<ReturnType<typeof startCluster>>["call"];

/** One gpuctl sweep with early stopping; trials timed from their jobs' start to their end. */
async function gpuctlSweep(call: Call, home: string, shape: SearchShape, seed: number) {
  const created = await call("POST", "/api/sweeps", {
    name: `peers-seed-${seed}`,
    project: "peers-search",
    base: {
      name: "synthetic",
      command: [
        "python3",
        `${ROOT}/examples/synthetic/train.py`,
        "--steps",
        String(shape.steps),
        "--sleep",
        String(shape.sleep),
        "--eval-every",
        String(EVAL_EVERY),
        "--ckpt-every",
        "0",
      ],
      working_dir: home,
      gpus: 1,
    },
    parameters: { lr: { distribution: "log_uniform", min: LR.min, max: LR.max } },
    method: "random",
    runs: shape.trials,
    seed,
    max_parallel: 1,
    metric: "eval/loss",
    early_stop: { min_steps: MIN_STEPS, every: MIN_STEPS, keep_fraction: 0.5 },
  });
  if (created.status !== 201) {
    throw new Error(`POST /api/sweeps ${created.status}: ${created.text}`);
  }
  const done = await until(
    async () => {
      const s = (await call("GET", `/api/sweeps/${created.json.id}`)).json;
      return s.status !== "RUNNING" ? s : null;
    },
    shape.trials * (shape.steps * shape.sleep + 30) * 1000,
    `sweep seed ${seed}`,
  );
  const trials: Trial[] = [];
  for (const t of done.trials) {
    if (!t.job_id) continue;
    const job = (await call("GET", `/api/jobs/${t.job_id}`)).json;
    if (!job.started_at || !job.finished_at) continue;
    const whole = t.status === "SUCCEEDED" && t.metric.step === shape.steps - 1;
    trials.push({
      start: Date.parse(job.started_at) / 1000,
      end: Date.parse(job.finished_at) / 1000,
      value: whole ? t.metric.latest : null,
      stopped_at: t.status === "STOPPED" ? t.stopped_at : null,
    });
  }
  return {
    outcome: searchOutcome(trials),
    wallS: (Date.parse(done.finished_at) - Date.parse(done.created_at)) / 1000,
  };
}

export async function benchSearch(
  report: Report,
  python: string | null,
  missing: { optuna?: string; ray?: string },
  shape: SearchShape,
): Promise<void> {
  const optimum = JSON.parse(
    new TextDecoder().decode(
      (await new Deno.Command("python3", {
        args: [`${HERE}/search.py`, "optimum", ...pythonArgs(shape)],
        stdout: "piped",
      }).output()).stdout,
    ),
  );
  console.log(`peers: gpuctl sweeps over seeds ${shape.seeds.join(", ")} …`);
  const c = await startCluster({
    fakeGpus: 2,
    sampleS: 10,
    heartbeatS: 2,
    prefix: "gpuctl-bench-peers-",
  });
  const gpuctl: SearchRun[] = [];
  try {
    for (const seed of shape.seeds) gpuctl.push(await gpuctlSweep(c.call, c.home, shape, seed));
  } finally {
    await c.stop();
  }
  const budget = `${shape.trials} trials × ≤ ${shape.steps} steps of ${shape.sleep * 1000} ms, ` +
    `${shape.seeds.length} seeds`;
  const peers: [string, string | undefined, (seed: number) => string[]][] = [
    [
      "Optuna TPE + SuccessiveHalvingPruner",
      missing.optuna,
      (s) => ["optuna", "--pruner", "sha", "--seed", String(s)],
    ],
    [
      "Optuna TPE + HyperbandPruner",
      missing.optuna,
      (s) => ["optuna", "--pruner", "hyperband", "--seed", String(s)],
    ],
    ["Ray Tune random + ASHA", missing.ray, (s) => ["ray", "--seed", String(s)]],
  ];
  const g = {
    best: gpuctl.map((r) => r.outcome.best),
    reach: gpuctl.map((r) => r.outcome.toWithinS),
    spent: gpuctl.map((r) => r.outcome.trialS),
    wall: gpuctl.map((r) => r.wallS),
    stopped: gpuctl.map((r) => r.outcome.stopped),
  };
  for (const [peer, why, args] of peers) {
    const name = (m: string) => `peer: ${peer} (${budget}): ${m}`;
    if (python === null || why) {
      report({
        name: name("search"),
        value: { value: NaN, unit: "", text: `not installed: ${why ?? "no Python for the peers"}` },
        baseline: null,
        target: null,
        note: "for comparison",
      });
      continue;
    }
    console.log(`peers: ${peer} …`);
    const runs: SearchRun[] = [];
    let failed: string | null = null;
    for (const seed of shape.seeds) {
      try {
        runs.push(await peerSearch(python, [...args(seed), ...pythonArgs(shape)]));
      } catch (e) {
        failed = (e as Error).message;
        break;
      }
    }
    if (failed) {
      report({
        name: name("search"),
        value: { value: NaN, unit: "", text: `failed: ${failed.split("\n").at(-1)}` },
        baseline: null,
        target: null,
        note: "for comparison",
      });
      continue;
    }
    const p = {
      best: runs.map((r) => r.outcome.best),
      reach: runs.map((r) => r.outcome.toWithinS),
      spent: runs.map((r) => r.outcome.trialS),
      wall: runs.map((r) => r.wallS),
      stopped: runs.map((r) => r.outcome.stopped),
    };
    const row = (m: string, key: keyof typeof p, unit: string, note = "for comparison") =>
      report({
        name: name(m),
        value: { value: medianOr(p[key]), unit, text: spread(p[key], unit) },
        baseline: { value: medianOr(g[key]), unit, text: `gpuctl sweep ${spread(g[key], unit)}` },
        target: null,
        note,
      });
    row(
      `best final eval/loss (the range's best is ${num(optimum.value)} at lr ${num(optimum.lr)})`,
      "best",
      "",
    );
    row("trial-seconds until the running best was within 1 % of its best", "reach", "s");
    row("trial-seconds in all", "spent", "s");
    row("trials stopped early", "stopped", "trials");
    row("wall time of the search", "wall", "s");
  }
}
