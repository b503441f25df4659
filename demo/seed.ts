/**
 * A small lab's day, submitted through the REST API: a finished baseline, a running
 * learning-rate sweep (one run with a loss spike), a run that fails with CUDA out of memory,
 * and a two-GPU job that waits in the queue. Everything runs examples/synthetic/train.py.
 */
const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const TRAIN = `${ROOT}/examples/synthetic/train.py`;
const EVALUATE = `${ROOT}/examples/synthetic/evaluate.py`;

export type Call = (method: string, path: string, body?: unknown) => Promise<
  // deno-lint-ignore no-explicit-any -- answers are read field by field
  { status: number; json: any }
>;

/** A client for the API with a bearer token. */
export function apiClient(base: string, token: string): Call {
  return async (method, path, body) => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    let json = null;
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: res.status, json };
  };
}

export interface DemoJobs {
  baseline: string;
  sweep: string[];
  oom: string;
  queued: string;
}

/** Submits the day's jobs; `sweepSleep` sets how long the sweep runs (seconds per step). */
export async function seedDemo(
  call: Call,
  workDir: string,
  opts: { sweepSleep?: number } = {},
): Promise<DemoJobs> {
  const submit = async (body: Record<string, unknown>) => {
    const res = await call("POST", "/api/jobs", { working_dir: workDir, gpus: 1, ...body });
    if (res.status !== 201) {
      throw new Error(`Cannot submit demo job ${body.name}: ${JSON.stringify(res.json)}`);
    }
    return res.json.id as string;
  };
  const sleep = String(opts.sweepSleep ?? 0.4);
  // Checkpoints of this project are evaluated by a held-out script of their own.
  await call("POST", "/api/projects", {
    name: "cifar-resnet",
    description: "ResNet-18 on CIFAR-10 (synthetic)",
    eval_command: ["python3", EVALUATE].join(" "),
  });
  const baseline = await submit({
    name: "baseline lr=0.05",
    project: "cifar-resnet",
    experiment: "baseline",
    command: ["python3", TRAIN, "--steps", "400", "--lr", "0.05", "--sleep", "0.01"],
    max_steps: 400,
  });
  const oom = await submit({
    name: "bs=512 no-ckpt",
    project: "cifar-resnet",
    experiment: "lr-sweep",
    command: ["python3", TRAIN, "--steps", "2000", "--fail-oom-at", "40", "--sleep", "0.02"],
    max_steps: 2000,
  });
  const sweep: string[] = [];
  for (const [lr, extra] of [["0.02", []], ["0.05", []], ["0.1", ["--spike-at", "60"]]] as const) {
    sweep.push(
      await submit({
        name: `sweep lr=${lr}`,
        project: "cifar-resnet",
        experiment: "lr-sweep",
        command: ["python3", TRAIN, "--steps", "4000", "--lr", lr, "--sleep", sleep, ...extra],
        max_steps: 4000,
        priority: 10,
      }),
    );
  }
  const queued = await submit({
    name: "ablation 2-GPU",
    project: "cifar-resnet",
    experiment: "ablation",
    command: ["python3", TRAIN, "--steps", "1000"],
    gpus: 2,
    max_steps: 1000,
  });
  return { baseline, sweep, oom, queued };
}

/** Waits until every demo job reached the state the pictures show. */
export async function demoSettled(call: Call, jobs: DemoJobs, ms = 120_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const all = (await call("GET", "/api/jobs?limit=50")).json.items as {
      id: string;
      status: string;
      run_id: string | null;
    }[];
    const status = (id: string) => all.find((j) => j.id === id)?.status;
    const runs = (await call("GET", "/api/runs?status=RUNNING&limit=50")).json.items as {
      job_id: string;
      step: number | null;
    }[];
    const sweepMoving = jobs.sweep.every((id) =>
      (runs.find((r) => r.job_id === id)?.step ?? 0) >= 80
    );
    const baselineRun = all.find((j) => j.id === jobs.baseline)?.run_id;
    const evaluated = baselineRun !== undefined && baselineRun !== null &&
      ((await call("GET", `/api/runs/${baselineRun}/checkpoints`)).json.items as {
        evaluations: { status: string }[];
      }[]).some((c) => c.evaluations.some((e) => e.status === "COMPLETED"));
    if (
      status(jobs.baseline) === "SUCCEEDED" && status(jobs.oom) === "FAILED" && sweepMoving &&
      status(jobs.queued) === "QUEUED" && evaluated
    ) return;
    if (Date.now() > deadline) {
      throw new Error(`The demo did not settle in ${ms} ms: ${JSON.stringify(all)}`);
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Once the baseline has finished: a held-out evaluation of its last checkpoint (on the CPU, so
 * it does not wait behind the queued two-GPU job).
 */
export async function evaluateBaseline(call: Call, jobs: DemoJobs, ms = 60_000): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const job = (await call("GET", `/api/jobs/${jobs.baseline}`)).json;
    if (job.status === "SUCCEEDED") {
      const cps = (await call("GET", `/api/runs/${job.run_id}/checkpoints`)).json.items;
      const last = cps[cps.length - 1];
      if (last) {
        await call("POST", `/api/checkpoints/${last.id}/evaluations`, {
          suite: "heldout",
          gpus: 0,
        });
      }
      return;
    }
    if (Date.now() > deadline) throw new Error("the demo's baseline did not finish");
    await new Promise((r) => setTimeout(r, 300));
  }
}
