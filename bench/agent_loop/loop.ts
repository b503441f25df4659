/**
 * An autoresearch-style loop that speaks only MCP (the official SDK client), as a coding agent
 * would: propose a change on top of the best kept run (a learning rate through `fork_run`, or
 * a line of train.py in a work tree of its own through `submit_job` with `parent_run`), keep
 * every GPU busy with one job queued ahead, `wait_for_run` on all of them at once (woken early
 * by anomalies), and mark each run kept or discarded with the numbers, keeping a logbook with
 * `add_note`. It stops at its time limit or count, or when a tool call is refused for a budget.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  applyIdea,
  type Idea,
  proposeIdea,
  type Recipe,
  recipeKey,
  SEED_LRS,
  seededRandom,
} from "./ideas.ts";
import { applyEdit, type TrainingRepo } from "./work_tree.ts";

/** The anomalies that end an experiment at once: the run is cancelled and discarded. */
const FATAL_ANOMALIES = new Set(["LOSS_NAN", "OOM"]);
/** Seconds one `wait_for_run` call waits before it is called again. */
const WAIT_S = 120;

export interface LoopOptions {
  client: Client;
  repo: TrainingRepo;
  project: string;
  experiment: string;
  /** How long the loop proposes experiments, in ms. */
  durationMs: number;
  /** Stop proposing after this many experiments. @default no limit */
  maxExperiments?: number;
  /** GPUs to keep busy. @default the cluster's GPUs from `get_status` */
  slots?: number;
  /** Jobs queued beyond the GPUs, so a GPU that comes free starts the next one at once. @default 1 */
  queueAhead?: number;
  /** At the end, wait for the runs in flight and judge them (true) or cancel them. @default false */
  finishInFlight?: boolean;
  /** Training steps a run takes, and seconds a step. @default 30, 0.2 */
  steps?: number;
  stepS?: number;
  /** Seed of the ideas. @default 1 */
  seed?: number;
  /** Every how many ideas one is a code edit (when one is left to try). @default CODE_EVERY */
  codeEvery?: number;
}

/** One experiment: what was tried, where, and how it ended. */
export interface Experiment {
  name: string;
  idea: string;
  kind: "seed" | "config" | "code";
  recipe: Recipe;
  jobId: string;
  runId: string | null;
  /** The run it was forked from: the best kept run when it was proposed (null for a seed). */
  parentRun: string | null;
  workDir: string;
  /** The train.py it was given (what its run's code must check out as). */
  source: string;
  outcome: "kept" | "discarded" | "unfinished" | null;
  value: number | null;
  reason: string;
}

/** Why the loop stopped proposing. */
export type Stop =
  | { kind: "time" }
  | { kind: "count" }
  | { kind: "budget"; tool: string; error: string };

export interface LoopResult {
  experiments: Experiment[];
  /** Experiments that ran to a decision (kept or discarded). */
  decided: number;
  toolCalls: number;
  byTool: Record<string, number>;
  slots: number;
  /** When the loop started and when it stopped proposing (ms since the epoch). */
  startedAt: number;
  stoppedAt: number;
  stop: Stop;
  best: { runId: string; value: number; idea: string } | null;
}

/** A tool's error answer (`isError`), with its text: `<Code>: <message>`. */
export class ToolError extends Error {
  constructor(readonly tool: string, readonly text: string) {
    super(`${tool}: ${text}`);
  }
}

/** Whether an error is a refusal for a budget (a tool error or an HTTP refusal naming one). */
export function isBudgetError(err: unknown): boolean {
  return /budget/i.test(err instanceof ToolError ? err.text : String((err as Error)?.message));
}

/** The MCP calls the loop makes, counted by tool. */
class Tools {
  calls = 0;
  byTool: Record<string, number> = {};
  constructor(private client: Client) {}

  // deno-lint-ignore no-explicit-any -- structured answers are read field by field
  async call(name: string, args: Record<string, unknown>, timeoutMs = 60_000): Promise<any> {
    this.calls++;
    this.byTool[name] = (this.byTool[name] ?? 0) + 1;
    const res = await this.client.callTool({ name, arguments: args }, undefined, {
      timeout: timeoutMs,
    });
    if (res.isError) {
      throw new ToolError(name, (res.content as { text?: string }[])[0]?.text ?? "");
    }
    return res.structuredContent;
  }
}

// deno-lint-ignore no-explicit-any -- a wait_for_run answer
type WaitAnswer = any;
type Settled = { exp: Experiment; answer?: WaitAnswer; error?: unknown };

/** Runs the loop until its time or count is up, or a budget refuses a call. */
export async function runLoop(o: LoopOptions): Promise<LoopResult> {
  const tools = new Tools(o.client);
  const steps = o.steps ?? 30;
  const stepS = o.stepS ?? 0.2;
  const ref = `${o.project}/${o.experiment}`;
  const random = seededRandom(o.seed ?? 1);
  const experiments: Experiment[] = [];
  const tried = new Set<string>();
  const inFlight = new Map<Experiment, Promise<Settled>>();
  /** The waits that have answered and are not handled yet. */
  const answered = new Map<Experiment, Settled>();
  const startedAt = Date.now();
  const deadline = startedAt + o.durationMs;
  let best: { exp: Experiment; value: number } | null = null;
  let stop: Stop | null = null;
  let stoppedAt = 0;
  let primarySet = false;

  const command = (lr: number) => [
    "python3",
    "train.py",
    "--lr",
    String(lr),
    "--steps",
    String(steps),
    "--step-s",
    String(stepS),
  ];

  const waitOn = (exp: Experiment, after: number | undefined): Promise<Settled> =>
    tools.call(
      "wait_for_run",
      {
        job_id: exp.jobId,
        timeout_s: WAIT_S,
        ...(after !== undefined ? { after_event_id: after } : {}),
      },
      (WAIT_S + 30) * 1000,
    ).then((answer) => ({ exp, answer }), (error) => ({ exp, error })).then((settled) => {
      answered.set(exp, settled);
      return settled;
    });

  /** Submits the next experiment; false when there is nothing to submit yet. */
  const propose = async (): Promise<boolean> => {
    const n = experiments.length + 1;
    let exp: Experiment;
    // deno-lint-ignore no-explicit-any -- a job answer
    let job: any;
    if (!best) {
      // Nothing kept yet: the seed learning rates, each a root of its own.
      const seeds = experiments.filter((e) => e.kind === "seed").length;
      if (seeds >= SEED_LRS.length) return false;
      const recipe = { lr: SEED_LRS[seeds], edits: [] };
      tried.add(recipeKey(recipe));
      exp = experiment(n, "seed", `lr ${recipe.lr}`, recipe, null, o.repo.root, o.repo.source);
      job = await tools.call("submit_job", {
        name: exp.name,
        command: command(recipe.lr),
        working_dir: exp.workDir,
        gpus: 1,
        project: o.project,
        experiment: o.experiment,
      });
      if (!primarySet) {
        primarySet = true;
        await tools.call("set_primary_metric", {
          scope: "experiment",
          scope_id: ref,
          key: "eval/loss",
          direction: "min",
        });
      }
    } else {
      const parent = best.exp;
      const forks = experiments.filter((e) => e.kind !== "seed").length;
      const idea: Idea = proposeIdea(parent.recipe, tried, random, forks + 1, o.codeEvery);
      const recipe = applyIdea(parent.recipe, idea);
      tried.add(recipeKey(recipe));
      if (idea.kind === "config") {
        exp = experiment(
          n,
          "config",
          idea.label,
          recipe,
          parent.runId,
          parent.workDir,
          parent.source,
        );
        job = await tools.call("fork_run", {
          run_id: parent.runId,
          overrides: { args: { lr: idea.lr } },
          name: exp.name,
        });
      } else {
        // A code idea trains in a work tree of its own: the runs queued or training from the
        // parent's folder keep the code they were given.
        const source = applyEdit(parent.source, idea.edit);
        const dir = await o.repo.workTree(source);
        exp = experiment(n, "code", idea.label, recipe, parent.runId, dir, source);
        job = await tools.call("submit_job", {
          name: exp.name,
          command: command(recipe.lr),
          working_dir: dir,
          gpus: 1,
          project: o.project,
          experiment: o.experiment,
          parent_run: parent.runId,
        });
      }
    }
    exp.jobId = job.id;
    experiments.push(exp);
    inFlight.set(exp, waitOn(exp, job.next_actions?.[0]?.args?.after_event_id));
    return true;
  };

  /** Cancels a job; one that ended meanwhile is left as it ended. */
  const cancel = async (exp: Experiment) => {
    try {
      await tools.call("cancel_job", { job_id: exp.jobId });
    } catch (err) {
      if (!(err instanceof ToolError && /^Conflict:.*already ended/.test(err.text))) throw err;
    }
  };

  const mark = async (exp: Experiment, outcome: "kept" | "discarded", reason: string) => {
    exp.outcome = outcome;
    exp.reason = reason;
    if (exp.runId) await tools.call("mark_run", { run_id: exp.runId, mark: outcome, reason });
  };

  /** Judges a run whose wait answered; a wait that must go on is started again. */
  const handle = async ({ exp, answer }: { exp: Experiment; answer: WaitAnswer }) => {
    exp.runId = answer.run_id ?? exp.runId;
    if (answer.reason === "timeout" || answer.reason === "step" || answer.reason === "event") {
      inFlight.set(exp, waitOn(exp, answer.last_event_id));
      return;
    }
    if (answer.reason === "anomaly") {
      const type = answer.event?.type as string;
      if (!FATAL_ANOMALIES.has(type) || answer.status !== "RUNNING") {
        inFlight.set(exp, waitOn(exp, answer.last_event_id));
        return;
      }
      await cancel(exp);
      await mark(
        exp,
        "discarded",
        `${type} at step ${answer.step ?? "?"}: cancelled (${exp.idea})`,
      );
      return;
    }
    // Finished.
    if (answer.status !== "SUCCEEDED") {
      // A budget may also end a run (its GPU-hours spent): then the loop stops proposing too.
      const why = `${answer.event?.message ?? ""} ${answer.diagnosis?.summary ?? ""}`.trim();
      if (/budget/i.test(why)) stop ??= { kind: "budget", tool: "wait_for_run", error: why };
      await mark(exp, "discarded", `ended ${answer.status} (${exp.idea})`);
      return;
    }
    const run = await tools.call("get_run", { run_id: exp.runId });
    const value: number | null = run.primary_metric?.latest ?? null;
    exp.value = value;
    if (value === null || !Number.isFinite(value)) {
      await mark(exp, "discarded", `no eval/loss (${exp.idea})`);
      return;
    }
    const text = (v: number) => v.toFixed(4);
    if (best && value >= best.value) {
      await mark(
        exp,
        "discarded",
        `eval/loss ${text(value)} does not beat best kept ${text(best.value)} (${exp.idea})`,
      );
      return;
    }
    await mark(
      exp,
      "kept",
      best
        ? `eval/loss ${text(value)} beats best kept ${text(best.value)} (${exp.idea})`
        : `eval/loss ${text(value)}: the first result, the number to beat (${exp.idea})`,
    );
    // The tree says which kept run to fork from next.
    const lineage = await tools.call("get_lineage", { experiment: ref });
    const bestExp = experiments.find((e) => e.runId === lineage.best_kept);
    if (bestExp && bestExp.value !== null) best = { exp: bestExp, value: bestExp.value };
    await tools.call("add_note", {
      run_id: exp.runId,
      text: `Kept ${exp.idea} on ${exp.parentRun ?? "a fresh start"}: eval/loss ${
        text(value)
      }; next ideas fork from ${lineage.best_kept}.`,
    });
  };

  let slots = 0;
  let capacity = 0;
  const budgetStop = (err: unknown): Stop => ({
    kind: "budget",
    tool: err instanceof ToolError ? err.tool : "?",
    error: err instanceof ToolError ? err.text : String((err as Error).message),
  });

  /** Proposes experiments until every GPU is busy and `queueAhead` more wait in the queue. */
  const refill = async () => {
    while (
      stop === null && inFlight.size < capacity && Date.now() < deadline &&
      (o.maxExperiments === undefined || experiments.length < o.maxExperiments)
    ) {
      try {
        if (!(await propose())) return;
      } catch (err) {
        if (!isBudgetError(err)) throw err;
        stop = budgetStop(err);
      }
    }
  };

  /** Whether a wait's answer means the run's GPU is (about to be) free. */
  const freesGpu = (a: WaitAnswer) =>
    a.reason === "finished" ||
    (a.reason === "anomaly" && FATAL_ANOMALIES.has(a.event?.type) && a.status === "RUNNING");

  /**
   * Waits until a wait answers (or `until` passes: false), then handles every answered wait:
   * refills the freed GPUs first, then judges each run.
   */
  const step = async (until: number | null): Promise<boolean> => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeUp = until === null ? null : new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), Math.max(0, until - Date.now()));
    });
    const next = await Promise.race([...inFlight.values(), ...(timeUp ? [timeUp] : [])]);
    clearTimeout(timer);
    if (next === null) return false;
    // Every wait that has answered by now, handled together.
    const batch = [...answered.values()].filter((a) => inFlight.has(a.exp));
    for (const a of batch) {
      inFlight.delete(a.exp);
      answered.delete(a.exp);
      if (a.error) throw a.error;
    }
    // The next ideas go in before these runs are judged, so a GPU that comes free never waits
    // on the judging (they fork from the best kept so far; these results count from the next).
    // Before anything is kept, the first result is worth more than a GPU's moment: judge first.
    if (until !== null && best !== null && batch.some((a) => freesGpu(a.answer))) await refill();
    for (const a of batch) {
      try {
        await handle({ exp: a.exp, answer: a.answer });
      } catch (err) {
        if (!isBudgetError(err)) throw err;
        a.exp.reason = `not judged: ${(err as Error).message}`;
        stop ??= budgetStop(err);
      }
    }
    return true;
  };

  const status = await tools.call("get_status", {});
  slots = o.slots ?? status.gpus.total;
  capacity = slots + (o.queueAhead ?? 1);
  while (stop === null) {
    await refill();
    if (stop !== null) break;
    if (Date.now() >= deadline) {
      stop = { kind: "time" };
      break;
    }
    if (o.maxExperiments !== undefined && experiments.length >= o.maxExperiments) {
      stop = { kind: "count" };
      break;
    }
    if (inFlight.size === 0) {
      throw new Error("the loop has nothing in flight and nothing to propose");
    }
    await step(deadline);
  }
  stoppedAt = Date.now();
  const stopped = stop as Stop;

  if (stopped.kind === "time" && !o.finishInFlight) {
    // Time is up: the runs still training are stopped and said to be unfinished.
    for (const exp of inFlight.keys()) await cancel(exp);
    for (const [exp, wait] of inFlight) {
      const settled = await wait;
      if (settled.error) throw settled.error;
      exp.runId = settled.answer.run_id ?? exp.runId;
      if (settled.answer.reason === "finished" && settled.answer.status === "SUCCEEDED") {
        await handle({ exp, answer: settled.answer }); // it ended before the cancel
        continue;
      }
      exp.outcome = "unfinished";
      exp.reason = `stopped unfinished at the loop's time limit (${exp.idea})`;
      if (exp.runId) {
        await tools.call("mark_run", { run_id: exp.runId, mark: "discarded", reason: exp.reason });
      }
    }
    inFlight.clear();
    answered.clear();
  }
  if (stopped.kind === "budget") {
    // A job the budget holds in the queue would wait there for a day: it is withdrawn. The
    // ones already training finish (or the server stops them at the budget) and are judged.
    for (const exp of [...inFlight.keys()]) {
      const job = await tools.call("get_job", { job_id: exp.jobId });
      if (job.status !== "QUEUED") continue;
      await cancel(exp);
      await inFlight.get(exp);
      inFlight.delete(exp);
      answered.delete(exp);
      exp.outcome = "unfinished";
      exp.reason = `withdrawn unstarted: ${stopped.error.slice(0, 200)} (${exp.idea})`;
    }
  }
  while (inFlight.size > 0) await step(null);

  if (stopped.kind !== "budget") {
    const decided = experiments.filter((e) => e.outcome === "kept" || e.outcome === "discarded");
    const top = await tools.call("query_runs", {
      where: { project: o.project, experiment: o.experiment, mark: "kept" },
      order_by: "metric.eval/loss.best",
      limit: 3,
    });
    await tools.call("add_note", {
      experiment: ref,
      text: `${decided.length} experiments decided in ${
        Math.round((stoppedAt - startedAt) / 1000)
      } s on ${slots} GPU(s); best kept: ${
        top.items.map((r: { id: string; name: string }) => `${r.id} (${r.name})`).join(", ") ||
        "none"
      }.`,
    });
  }
  const finalBest = best as { exp: Experiment; value: number } | null;
  return {
    experiments,
    decided: experiments.filter((e) => e.outcome === "kept" || e.outcome === "discarded").length,
    toolCalls: tools.calls,
    byTool: tools.byTool,
    slots,
    startedAt,
    stoppedAt,
    stop: stopped,
    best: finalBest && finalBest.exp.runId
      ? { runId: finalBest.exp.runId, value: finalBest.value, idea: finalBest.exp.idea }
      : null,
  };
}

function experiment(
  n: number,
  kind: Experiment["kind"],
  idea: string,
  recipe: Recipe,
  parentRun: string | null,
  workDir: string,
  source: string,
): Experiment {
  return {
    name: `e${n}-${idea.replaceAll(" ", "-")}`,
    idea,
    kind,
    recipe,
    jobId: "",
    runId: null,
    parentRun,
    workDir,
    source,
    outcome: null,
    value: null,
    reason: "",
  };
}
