// deno-lint-ignore-file no-console -- a benchmark reports on the console
/**
 * `deno task bench:agent-loop`: the autoresearch loop (bench/agent_loop/loop.ts, MCP only) on
 * a server and an agent with 4 fake GPUs, each mode for a fixed time:
 *
 * - parallel: every GPU kept busy (one job queued ahead);
 * - sequential: the same loop, one experiment at a time on one GPU (the baseline);
 * - budget (`--budget`): the loop with a token whose budget allows a little GPU time
 *   (`max_gpu_hours_24h`); it must stop at the budget with the server's error, not past it.
 *
 * Reports the GPUs' idle share, experiments per GPU-hour against the sequential loop, tool
 * calls per experiment, and whether every run's code checks out again as it ran; the rows go
 * to `bench/results/agent_loop.json`.
 *
 * Flags: `--duration-s=75` (each mode), `--gpus=4`, `--steps=30`, `--step-s=0.2` (a run's
 * length), `--seed=1`, `--modes=parallel,sequential`, `--budget` (adds the budget mode),
 * `--budget-gpu-s=40` (the budget's GPU-seconds).
 */
import { BenchReport } from "./report.ts";
import {
  createBudgetedToken,
  gpuSecondsUsed,
  type LoopCluster,
  startLoopCluster,
} from "./agent_loop/cluster.ts";
import { type LoopResult, runLoop } from "./agent_loop/loop.ts";
import { checkCode, heldShare, idleFraction, runFacts } from "./agent_loop/measure.ts";
import { TrainingRepo } from "./agent_loop/work_tree.ts";

function flag(name: string, fallback: string): string {
  const hit = Deno.args.find((a) => a.startsWith(`--${name}=`));
  return hit ? hit.slice(name.length + 3) : fallback;
}
const numberFlag = (name: string, fallback: number) => {
  const v = Number(flag(name, String(fallback)));
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} must be a positive number`);
  return v;
};

const DURATION_S = numberFlag("duration-s", 75);
const GPUS = numberFlag("gpus", 4);
const STEPS = numberFlag("steps", 30);
const STEP_S = numberFlag("step-s", 0.2);
const SEED = numberFlag("seed", 1);
const BUDGET_GPU_S = numberFlag("budget-gpu-s", 40);
/** How often the server's budget loop looks at running jobs (server/budgets/loop.ts). */
const BUDGET_CHECK_S = 5;
const MODES = new Set(flag("modes", "parallel,sequential").split(","));
if (Deno.args.includes("--budget")) MODES.add("budget");

interface ModeResult {
  loop: LoopResult;
  idle: number;
  /** The share of GPU time between a job's dispatch and its process start. */
  starting: number;
  perGpuHour: number;
  callsPerExperiment: number;
  codeOk: number;
  codeRuns: number;
  problems: string[];
}

/** One mode of the loop in its own experiment, then what the server shows of it. */
async function mode(
  c: LoopCluster,
  repo: TrainingRepo,
  name: string,
  opts: { slots: number; queueAhead: number; token?: string },
): Promise<ModeResult> {
  await using client = await c.client(opts.token);
  console.log(`${name}: ${opts.slots} GPU(s), ${DURATION_S} s …`);
  const loop = await runLoop({
    client,
    repo,
    project: "agent-loop",
    experiment: name,
    durationMs: DURATION_S * 1000,
    slots: opts.slots,
    queueAhead: opts.queueAhead,
    steps: STEPS,
    stepS: STEP_S,
    seed: SEED,
  });
  const facts = await runFacts(c.call, loop.experiments);
  const idle = idleFraction(
    facts.flatMap((f) => (f.busy ? [f.busy] : [])),
    loop.slots,
    loop.startedAt,
    loop.stoppedAt,
  );
  const starting = heldShare(
    facts.flatMap((f) => (f.starting ? [f.starting] : [])),
    loop.slots,
    loop.startedAt,
    loop.stoppedAt,
  );
  const hours = (loop.slots * (loop.stoppedAt - loop.startedAt)) / 3_600_000;
  const checks = await checkCode(
    facts,
    { url: c.server.url, token: c.server.adminToken },
    `${c.home}/checkouts-${name}`,
  );
  const r: ModeResult = {
    loop,
    idle,
    starting,
    perGpuHour: loop.decided / hours,
    callsPerExperiment: loop.toolCalls / Math.max(1, loop.decided),
    codeOk: checks.filter((x) => x.ok).length,
    codeRuns: checks.length,
    problems: checks.filter((x) => !x.ok).map((x) => `${x.runId}: ${x.problem}`),
  };
  const kept = loop.experiments.filter((e) => e.outcome === "kept").length;
  console.log(
    `${name}: ${loop.experiments.length} submitted, ${loop.decided} decided (${kept} kept), ` +
      `stopped on ${loop.stop.kind}; idle ${pct(idle)} (${pct(starting)} starting); ` +
      `${loop.toolCalls} tool calls ${JSON.stringify(loop.byTool)}; best ${
        loop.best
          ? `${loop.best.runId} ${loop.best.idea} eval/loss ${loop.best.value.toFixed(4)}`
          : "none"
      }; code ${r.codeOk}/${r.codeRuns}`,
  );
  for (const p of r.problems) console.log(`  code problem: ${p}`);
  return r;
}

const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
/** The idle share, and how much of it was a job's start (dispatch → process) on its GPU. */
const idleText = (r: ModeResult) =>
  `${pct(r.idle)} (${pct(r.starting)} from dispatch to process start, ${
    pct(Math.max(0, r.idle - r.starting))
  } with no job placed)`;

/** The machine's 1-minute load average (others' work on a shared machine shows here). */
const load = () => Deno.readTextFileSync("/proc/loadavg").split(" ")[0];

const bench = new BenchReport();
console.log(`load average at start: ${load()} on ${navigator.hardwareConcurrency} cores`);
const c = await startLoopCluster(GPUS);
try {
  const repo = await TrainingRepo.create(c.home);
  const results: Record<string, ModeResult> = {};
  if (MODES.has("parallel")) {
    results.parallel = await mode(c, repo, "parallel", { slots: GPUS, queueAhead: 1 });
  }
  if (MODES.has("sequential")) {
    results.sequential = await mode(c, repo, "sequential", { slots: 1, queueAhead: 0 });
  }
  const p = results.parallel;
  const s = results.sequential;
  const len = `${DURATION_S} s, runs of ${STEPS} × ${STEP_S} s`;
  if (p) {
    bench.add({
      name: `agent loop: GPU idle share, ${GPUS} fake GPUs kept full over MCP (${len})`,
      value: { value: p.idle * 100, unit: "%", text: idleText(p) },
      baseline: s
        ? {
          value: s.idle * 100,
          unit: "%",
          text: `the same loop sequentially on 1 GPU ${idleText(s)}`,
        }
        : null,
      target: { op: "<=", value: 5 },
    });
    bench.add({
      name: `agent loop: experiments per GPU-hour (${GPUS} GPUs in parallel)`,
      value: {
        value: p.perGpuHour,
        unit: "experiments/GPU-hour",
        text: `${Math.round(p.perGpuHour)} (${p.loop.decided} decided in ${DURATION_S} s)`,
      },
      baseline: s
        ? {
          value: s.perGpuHour,
          unit: "experiments/GPU-hour",
          text: `sequentially on 1 GPU ${Math.round(s.perGpuHour)} (${s.loop.decided} decided)`,
        }
        : null,
      target: null,
      note: "≈ the sequential loop's: every GPU as busy as the one",
    });
    bench.add({
      name: "agent loop: MCP tool calls per decided experiment",
      value: {
        value: p.callsPerExperiment,
        unit: "calls",
        text: `${p.callsPerExperiment.toFixed(1)} (${p.loop.toolCalls} calls)`,
      },
      baseline: s
        ? {
          value: s.callsPerExperiment,
          unit: "calls",
          text: `sequentially ${s.callsPerExperiment.toFixed(1)}`,
        }
        : null,
      target: null,
      note: "submit or fork, wait, get_run, mark (notes and lineage on a keep)",
    });
  }
  const all = Object.values(results);
  if (all.length) {
    const ok = all.reduce((n, r) => n + r.codeOk, 0);
    const runs = all.reduce((n, r) => n + r.codeRuns, 0);
    const edits = all.reduce(
      (n, r) => n + r.loop.experiments.filter((e) => e.kind === "code" && e.runId).length,
      0,
    );
    bench.add({
      name: "agent loop: runs whose code `gpuctl run checkout` recreates as they ran",
      value: { value: ok, unit: "runs", text: `${ok} of ${runs} (${edits} with a code edit)` },
      baseline: null,
      target: { op: ">=", value: runs },
    });
  }
  if (MODES.has("budget")) await budgetMode(c, repo, bench);
  console.log(`load average at the end: ${load()}`);
  await bench.write(new URL("./results/agent_loop.json", import.meta.url).pathname);
} finally {
  await c.cancelLeftovers();
  await c.stop();
}

/**
 * The loop with a token whose budget is `BUDGET_GPU_S` GPU-seconds a day: it must stop on the
 * server's budget error, and its jobs must not have used more than the budget and what the
 * server's budget loop can let pass between two looks (every GPU for one interval).
 */
async function budgetMode(c: LoopCluster, repo: TrainingRepo, bench: BenchReport) {
  const token = await createBudgetedToken(c.call, { gpuSeconds: BUDGET_GPU_S });
  const r = await mode(c, repo, "budget", { slots: GPUS, queueAhead: 1, token });
  const submitted = r.loop.experiments.length;
  const stop = r.loop.stop;
  const used = await gpuSecondsUsed(c.server.url, token);
  const error = stop.kind === "budget"
    ? `${stop.tool}: ${stop.error.split("\n")[0]}`
    : `no budget error (${stop.kind})`;
  const bound = BUDGET_GPU_S + BUDGET_CHECK_S * GPUS;
  console.log(
    `budget: ${submitted} runs submitted; ${
      used?.toFixed(1)
    } GPU-s used of ${BUDGET_GPU_S} (at most ${bound} with the budget loop's interval); ${error}`,
  );
  bench.add({
    name:
      `agent loop with a tight budget (${BUDGET_GPU_S} GPU-s a day): GPU-seconds used when it stopped`,
    value: {
      value: used ?? -1,
      unit: "GPU-s",
      text: `${
        used === null ? "?" : used.toFixed(1)
      } GPU-s, ${submitted} runs; stopped on: ${error}`,
    },
    baseline: null,
    // Met only when a budget stopped it: a loop stopped by its time limit proves nothing.
    target: stop.kind === "budget" && used !== null ? { op: "<=", value: bound } : null,
    note: stop.kind === "budget" ? undefined : "NOT stopped by a budget",
  });
}
