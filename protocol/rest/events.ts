/** The filters of `GET /api/events` and `GET /api/events/stream`. */
import { z } from "zod";
import { SEVERITIES, wordList } from "../vocabulary.ts";
import { MAX_NAME_LENGTH, pageQuery } from "./fields.ts";

/** The filters of both; `severity`: at least this. */
const eventFilterShape = {
  run_id: z.string().max(MAX_NAME_LENGTH).optional().describe("Only events of this run"),
  job_id: z.string().max(MAX_NAME_LENGTH).optional().describe("Only events of this job"),
  node_id: z.string().max(MAX_NAME_LENGTH).optional().describe("Only events of this node"),
  type: z.string().max(MAX_NAME_LENGTH).optional().describe(
    'Only events of this type, e.g. "LOSS_NAN", "OOM", "RUN_FAILED", "CHECKPOINT_CREATED"',
  ),
  severity: z.enum(SEVERITIES).optional().describe(
    `Only events at least this severe: ${wordList(SEVERITIES, true)}`,
  ),
};

/** `GET /api/events`: newest first. */
export const eventListQuery = pageQuery.extend(eventFilterShape);
export type EventListQuery = z.infer<typeof eventListQuery>;

/** `GET /api/events/stream`: the same filters; `after` (or Last-Event-ID) resumes. */
export const eventStreamQuery = z.object({ ...eventFilterShape, after: z.string().optional() });
export type EventFilterQuery = z.infer<typeof eventStreamQuery>;
