// The budget flags of `token create` and `token budget`, and how a budget prints.

import { z } from "zod";
import {
  BUDGET_MEANING,
  BUDGET_NAMES,
  type BudgetName,
  type BudgetStatus,
  type TokenBudget,
} from "../protocol/budgets.ts";
import type { FlagSpec, FlagValues } from "./define_command.ts";
import type { CommandContext } from "./command.ts";
import { clean } from "./output.ts";

/** A limit from its text: a number, or `none` to remove it. */
const limitFlag = z.string().regex(/^(none|\d+(\.\d+)?)$/, 'must be a number or "none"')
  .transform((s) => s === "none" ? null : Number(s)).optional();

/** `--max-gpus` … `--max-checkpoint-bytes`, one per budget. */
export const BUDGET_FLAGS = {
  maxGpus: { arg: "N", schema: limitFlag, help: `limit on ${BUDGET_MEANING.max_gpus}` },
  maxGpuHours: {
    arg: "H",
    schema: limitFlag,
    help: `limit on ${BUDGET_MEANING.max_gpu_hours_24h}`,
  },
  maxQueued: { arg: "N", schema: limitFlag, help: `limit on ${BUDGET_MEANING.max_queued_jobs}` },
  maxTrials: {
    arg: "N",
    schema: limitFlag,
    help: `limit on ${BUDGET_MEANING.max_trials_per_sweep}`,
  },
  maxWallClock: {
    arg: "S",
    schema: limitFlag,
    help: `limit on ${BUDGET_MEANING.max_wall_clock_s}`,
  },
  maxCheckpointBytes: {
    arg: "B",
    schema: limitFlag,
    help: `limit on ${BUDGET_MEANING.max_checkpoint_bytes}`,
  },
} satisfies Record<string, FlagSpec>;

const FIELD_OF: Record<keyof typeof BUDGET_FLAGS, BudgetName> = {
  maxGpus: "max_gpus",
  maxGpuHours: "max_gpu_hours_24h",
  maxQueued: "max_queued_jobs",
  maxTrials: "max_trials_per_sweep",
  maxWallClock: "max_wall_clock_s",
  maxCheckpointBytes: "max_checkpoint_bytes",
};

/** The budget the flags give (only the flags given; `none` is null). */
export function budgetFromFlags(flags: FlagValues<typeof BUDGET_FLAGS>): TokenBudget {
  const out: TokenBudget = {};
  for (const [flag, field] of Object.entries(FIELD_OF)) {
    const v = flags[flag as keyof typeof BUDGET_FLAGS];
    if (v !== undefined) out[field] = v;
  }
  return out;
}

/** A stored budget in one line: `max_gpus=4 max_queued_jobs=10`, or `none`. */
export function budgetText(b: TokenBudget | null | undefined): string {
  const parts = BUDGET_NAMES.flatMap((n) => typeof b?.[n] === "number" ? [`${n}=${b[n]}`] : []);
  return parts.length ? parts.join(" ") : "none";
}

/** Prints each budget's limit, use and what is left. */
export function printBudget(
  ctx: CommandContext,
  b: BudgetStatus | null | undefined,
  label = "budget",
): void {
  if (!b) return;
  const lines = BUDGET_NAMES.flatMap((n) => {
    const l = b[n];
    if (!l) return [];
    const use = l.used === null
      ? `limit ${l.limit}`
      : `${l.used} used of ${l.limit}, ${l.left} left`;
    return [`  ${n.padEnd(22)} ${clean(use)}`];
  });
  if (lines.length === 0) return;
  ctx.io.out(`${label}:`);
  for (const line of lines) ctx.io.out(line);
}
