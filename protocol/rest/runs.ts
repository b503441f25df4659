/** What the run reads accept: the run lists and groups, a run's logs, and run comparisons. */
import { z } from "zod";
import { RUN_SOURCES, RUN_STATUSES, wordList } from "../vocabulary.ts";
import { commaList, id, MAX_NAME_LENGTH, pageQuery } from "./fields.ts";

/** The filters of `GET /api/runs` and `GET /api/run-groups`; `q` searches run names and ids. */
const runFilterShape = {
  project: z.string().max(MAX_NAME_LENGTH).optional().describe("Only runs of this project"),
  experiment: z.string().max(MAX_NAME_LENGTH).optional().describe(
    "Only runs of this experiment (its name within the project)",
  ),
  status: z.enum(RUN_STATUSES).optional().describe("Only runs in this status"),
  job_id: z.string().max(MAX_NAME_LENGTH).optional().describe(
    "Only the runs (attempts) of this job",
  ),
  source: z.enum(RUN_SOURCES).optional().describe(wordList(RUN_SOURCES, true)),
  q: z.string().trim().max(MAX_NAME_LENGTH).optional().describe(
    "Only runs whose name or id contains this (any case)",
  ),
};

/** `GET /api/runs`: newest first, each run with its primary metric. */
export const runListQuery = pageQuery.extend(runFilterShape);
export type RunListQuery = z.infer<typeof runListQuery>;

/** `GET /api/run-groups`: the same filters, runs counted by project and experiment. */
export const runGroupsQuery = z.object(runFilterShape);
export type RunGroupsQuery = z.infer<typeof runGroupsQuery>;

/** The most log lines one `GET /api/runs/{id}/logs` returns. */
export const MAX_LOG_LINES = 2000;

/**
 * `GET /api/runs/{id}/logs`: lines after `after_seq` (oldest first), or with no `after_seq`
 * the last `limit` lines (the tail).
 */
export const logsQuery = z.object({
  after_seq: z.coerce.number().int().min(0).optional().describe(
    "Return the lines after this seq, oldest first (without it: the last lines, the tail)",
  ),
  limit: z.coerce.number().int().min(1).max(MAX_LOG_LINES).optional().describe(
    `How many lines at most (at most ${MAX_LOG_LINES})`,
  ),
});
export type LogsQuery = z.infer<typeof logsQuery>;

/** The runs one comparison names: 2 to 50 ids. */
export const comparedRunIds = z.array(id).min(
  2,
  "must name at least 2 runs (comma-separated in a query)",
).max(
  50,
  "names more than 50 runs",
);

/** `GET /api/runs/compare?runs=a,b,c&metric=`. */
export const compareRunsQuery = z.object({
  runs: commaList.pipe(comparedRunIds),
  metric: z.string().trim().min(1).max(MAX_NAME_LENGTH).optional(),
});
