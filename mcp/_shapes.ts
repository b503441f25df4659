/**
 * Output schemas of the tools. Loose on purpose: they name and describe the fields a model
 * relies on, and let the rest of the REST body through unchanged (a client validates
 * `structuredContent` against them, so a new field in an API object must not break a tool).
 */
import { z } from "zod";
import { ANOMALY_EVENT_TYPES } from "../protocol/event_types.ts";
import {
  CHECKPOINT_STATES,
  JOB_STATUSES,
  METRIC_DIRECTIONS,
  RUN_STATUSES,
  wordList,
} from "../protocol/vocabulary.ts";

const nullableString = z.string().nullable();

export const nextActions = z.array(z.looseObject({
  tool: z.string().describe("The tool to call next"),
  args: z.record(z.string(), z.unknown()).describe("Its arguments"),
  why: z.string().describe("Why"),
})).describe("What to do next: call `tool` with `args`");

export const jobShape = z.looseObject({
  id: z.string().describe("The job id (job_id in other tools)"),
  name: z.string(),
  kind: z.enum(["TRAIN", "EVALUATE"]),
  status: z.string().describe(wordList(JOB_STATUSES)),
  attempt: z.number(),
  project: z.string(),
  experiment: nullableString,
  gpus: z.number(),
  failure_class: nullableString,
  run_id: nullableString.describe("The current attempt's run"),
});

export const runShape = z.looseObject({
  id: z.string().describe("The run id (run_id in other tools)"),
  job_id: nullableString,
  name: z.string(),
  project: z.string(),
  experiment: nullableString,
  status: z.string().describe(wordList(RUN_STATUSES)),
  step: z.number().nullable(),
  primary_metric: z.looseObject({
    key: z.string(),
    direction: z.enum(METRIC_DIRECTIONS),
  }).nullable().describe("The run's primary metric: key, direction, latest, best, best_step"),
});

export const eventShape = z.looseObject({
  id: z.number(),
  ts: z.string(),
  type: z.string(),
  severity: z.string(),
  run_id: nullableString,
  job_id: nullableString,
  message: z.string(),
});

export const checkpointShape = z.looseObject({
  id: z.string().describe("The checkpoint id (checkpoint_id in other tools)"),
  run_id: z.string(),
  step: z.number().nullable(),
  path: z.string(),
  state: z.enum(CHECKPOINT_STATES).describe(
    "Only valid checkpoints can be used: overwritten (another run's weights now), gone (deleted) " +
      "and incomplete (cut short; problem says why) ones are never recommended or evaluated",
  ),
  evaluations: z.array(z.looseObject({ id: z.string(), suite: z.string(), status: z.string() })),
});

/** `{items, next_cursor}` of a list. */
export function pageOf(item: z.ZodType, what: string) {
  return z.looseObject({
    items: z.array(item).describe(what),
    next_cursor: nullableString.describe("Pass as cursor to get the next page; null: no more"),
  });
}

/** The answer of a semantic tool: its own fields, a summary and next_actions. */
export function semanticShape(fields: Record<string, z.ZodType>) {
  return z.looseObject({
    ...fields,
    summary: z.string().describe("The answer in a few sentences"),
    next_actions: nextActions,
  });
}

export const anomalyTypes = ANOMALY_EVENT_TYPES;
