import { assert, assertEquals, assertStringIncludes } from "../../tests/assert.ts";
import {
  budgetStatus,
  type BudgetUsage,
  gpuHours,
  holdOverBudget,
  overruns,
  submissionRefusal,
  sweepRefusal,
} from "./budget.ts";

const NOW = Date.parse("2026-03-01T12:00:00Z");
const at = (hoursAgo: number) => new Date(NOW - hoursAgo * 3600_000).toISOString();
const usage = (u: Partial<BudgetUsage> = {}): BudgetUsage => ({
  gpus_in_use: 0,
  queued_jobs: 0,
  gpu_hours_24h: 0,
  checkpoint_bytes: new Map(),
  ...u,
});

Deno.test("gpuHours() counts GPUs × time inside the last 24 hours only", () => {
  assertEquals(
    gpuHours([
      // 2 GPUs for the last 3 hours, still running.
      { gpus: 2, started_at: at(3), finished_at: null },
      // 4 GPUs from 30 h ago to 20 h ago: only the 4 hours inside the window count.
      { gpus: 4, started_at: at(30), finished_at: at(20) },
      // Ended before the window: nothing.
      { gpus: 8, started_at: at(50), finished_at: at(25) },
    ], NOW),
    2 * 3 + 4 * 4,
  );
});

Deno.test("submissionRefusal() names the budget, the use and the limit of the first one passed", () => {
  const table: [string, Parameters<typeof submissionRefusal>, string | null, string][] = [
    ["no budget", [null, usage(), { gpus: 8, project: "p" }], null, ""],
    [
      "more GPUs than it may ever hold",
      [
        { max_gpus: 2 },
        usage({ gpus_in_use: 1 }),
        { gpus: 4, project: "p" },
      ],
      "max_gpus",
      "4 GPUs requested, more than the 2",
    ],
    [
      "GPUs in use only make it wait",
      [
        { max_gpus: 2 },
        usage({ gpus_in_use: 2 }),
        { gpus: 2, project: "p" },
      ],
      null,
      "",
    ],
    [
      "the queue is full",
      [
        { max_queued_jobs: 3 },
        usage({ queued_jobs: 3 }),
        { gpus: 1, project: "p" },
      ],
      "max_queued_jobs",
      "3 of its jobs queued, limit 3",
    ],
    [
      "GPU-hours spent",
      [
        { max_gpu_hours_24h: 10 },
        usage({ gpu_hours_24h: 10.5 }),
        { gpus: 1, project: "p" },
      ],
      "max_gpu_hours_24h",
      "10.5 GPU-hours used in the last 24 hours, limit 10",
    ],
    [
      "a CPU-only job uses no GPU-hours",
      [
        { max_gpu_hours_24h: 10 },
        usage({ gpu_hours_24h: 10.5 }),
        { gpus: 0, project: "p" },
      ],
      null,
      "",
    ],
    [
      "checkpoints fill the project",
      [
        { max_checkpoint_bytes: 1000 },
        usage({ checkpoint_bytes: new Map([["p", 1200], ["q", 10]]) }),
        { gpus: 1, project: "p" },
      ],
      "max_checkpoint_bytes",
      'keep 1200 bytes of checkpoints in project "p", limit 1000',
    ],
    [
      "another project's checkpoints do not count",
      [
        { max_checkpoint_bytes: 1000 },
        usage({ checkpoint_bytes: new Map([["p", 1200]]) }),
        { gpus: 1, project: "q" },
      ],
      null,
      "",
    ],
  ];
  for (const [name, args, budget, words] of table) {
    const r = submissionRefusal(...args);
    assertEquals(r?.budget ?? null, budget, name);
    if (r) assertStringIncludes(r.problem, words, name);
  }
});

Deno.test("sweepRefusal() refuses a sweep with more trials than max_trials_per_sweep", () => {
  assertEquals(sweepRefusal({ max_trials_per_sweep: 8 }, 8), null);
  const r = sweepRefusal({ max_trials_per_sweep: 8 }, 9)!;
  assertEquals([r.budget, r.requested, r.limit], ["max_trials_per_sweep", 9, 8]);
});

Deno.test("holdOverBudget() lets jobs through in queue order until the token's GPUs are taken", () => {
  const tokens = new Map([
    ["t1", { name: "agent", budget: { max_gpus: 3 }, gpus_in_use: 1, gpu_hours_24h: 0 }],
    ["t2", { name: "spent", budget: { max_gpu_hours_24h: 5 }, gpus_in_use: 0, gpu_hours_24h: 5 }],
  ]);
  const held = holdOverBudget([
    { id: "a", gpus: 1, submitted_by: "t1" }, // 2 held
    { id: "b", gpus: 2, submitted_by: "t1" }, // would be 4 > 3: waits
    { id: "c", gpus: 1, submitted_by: "t1" }, // 3: fits
    { id: "d", gpus: 0, submitted_by: "t1" }, // CPU-only: never held
    { id: "e", gpus: 1, submitted_by: "t2" }, // GPU-hours spent
    { id: "f", gpus: 8, submitted_by: null }, // no token: not this function's business
  ], tokens);
  assertEquals([...held.keys()], ["b", "e"]);
  assertStringIncludes(held.get("b")!, 'budget max_gpus of token "agent": 2 GPUs held');
  assertStringIncludes(held.get("e")!, "budget max_gpu_hours_24h");
});

Deno.test("overruns() stops a job at its wall-clock limit and GPU jobs once GPU-hours are spent", () => {
  const running = [
    { id: "long", name: "l", project: "p", gpus: 1, started_at: at(2) },
    { id: "short", name: "s", project: "p", gpus: 1, started_at: at(0.5) },
    { id: "cpu", name: "c", project: "p", gpus: 0, started_at: at(0.5) },
  ];
  const wall = overruns(
    { name: "agent", budget: { max_wall_clock_s: 3600 }, gpu_hours_24h: 0 },
    running,
    NOW,
  );
  assertEquals(wall.map((o) => [o.job_id, o.budget]), [["long", "max_wall_clock_s"]]);
  assertStringIncludes(wall[0].reason, "job ran 7200 s, limit 3600 s");

  const hours = overruns(
    { name: "agent", budget: { max_gpu_hours_24h: 2 }, gpu_hours_24h: 2.5 },
    running,
    NOW,
  );
  assertEquals(hours.map((o) => o.job_id), ["long", "short"]);
  assert(hours.every((o) => o.reason.includes("max_gpu_hours_24h")));
});

Deno.test("budgetStatus() shows limit, used and left, and null where there is no limit", () => {
  const s = budgetStatus(
    { max_gpus: 4, max_queued_jobs: 2, max_wall_clock_s: 60, max_checkpoint_bytes: 100 },
    usage({ gpus_in_use: 3, queued_jobs: 5, checkpoint_bytes: new Map([["a", 40], ["b", 70]]) }),
  );
  assertEquals(s.max_gpus, { limit: 4, used: 3, left: 1 });
  assertEquals(s.max_queued_jobs, { limit: 2, used: 5, left: 0 });
  assertEquals(s.max_wall_clock_s, { limit: 60, used: null, left: null });
  assertEquals(s.max_checkpoint_bytes, { limit: 100, used: 70, left: 30 });
  assertEquals(s.max_gpu_hours_24h, null);
});
