/**
 * Lineage requests and answers: forking a run, marking it kept or discarded, notes, the tree
 * of an experiment's runs, and a run's code. Shared by the REST API, the MCP tools, the CLI
 * and the console.
 *
 * @module
 */
import { z } from "zod";
import { ENV_NAME, freeJson, MAX_NAME_LENGTH, MAX_TEXT_LENGTH } from "./rest/fields.ts";
import { PARAM_NAME } from "./sweeps.ts";
import type { ForkOverrides, PrimaryMetric, RunMark } from "./objects.ts";
import { RUN_MARKS, type RunStatus } from "./vocabulary.ts";
import type { Provenance } from "./provenance.ts";

const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be a gpuctl id");
const experimentRef = z.string().max(2 * MAX_NAME_LENGTH + 1).regex(
  /^[^/]+\/.+$/,
  'must be "<project>/<experiment>"',
);
/** One line of text: a mark's reason. */
const oneLine = z.string().trim().min(1, "must not be empty").max(500).regex(
  /^[^\r\n]*$/,
  "must be one line",
);

/** A request names a run or an experiment, not both and not neither. */
function runOrExperiment(
  r: { run_id?: string; experiment?: string },
  ctx: z.RefinementCtx,
): void {
  if ((r.run_id === undefined) === (r.experiment === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: ["run_id"],
      message: 'name exactly one of run_id or experiment ("<project>/<experiment>")',
    });
  }
}

/** Notes longer than this are refused (a logbook entry, not a document). */
export const MAX_NOTE_LENGTH = 4000;

/** `overrides` of a fork: what changes of the parent's job. */
export const forkOverrides = z.strictObject({
  args: z.record(
    z.string().regex(PARAM_NAME, "argument names must match [A-Za-z_][A-Za-z0-9_.-]*"),
    z.union([
      z.string().max(MAX_TEXT_LENGTH),
      z.number().refine(Number.isFinite, "must be finite"),
      z.boolean(),
      z.null(),
    ]),
  ).optional().describe(
    '--NAME VALUE arguments: {"lr": 0.001} replaces the value after --lr (or --lr=…) in the ' +
      "parent's command, or appends --lr 0.001; true: the bare flag --NAME; false or null: removed",
  ),
  env: z.record(
    z.string().regex(ENV_NAME, "env names must match [A-Z_][A-Z0-9_]*"),
    z.string().max(MAX_TEXT_LENGTH).nullable(),
  ).optional().describe("Environment variables set (null: removed)"),
  config: z.record(
    z.string().regex(PARAM_NAME, "config keys must match [A-Za-z_][A-Za-z0-9_.-]*"),
    freeJson,
  )
    .optional().describe(
      "Config values: recorded on the child's run and passed as GPUCTL_PARAM_NAME variables",
    ),
});

/** `POST /api/runs/{id}/fork`. */
export const forkRequest = z.strictObject({
  overrides: forkOverrides.optional().describe("What changes of the parent's job"),
  from_checkpoint: id.optional().describe(
    "A checkpoint id (of the parent or any run) the child resumes from: its path is the " +
      "child's GPUCTL_RESUME_FROM",
  ),
  name: z.string().trim().min(1).max(MAX_NAME_LENGTH).optional().describe(
    "The child job's name (default: the parent's name and what changed)",
  ),
});
export type ForkRequest = z.infer<typeof forkRequest>;

/** `POST /api/runs/{id}/mark`. */
export const markRequest = z.strictObject({
  mark: z.enum(RUN_MARKS).describe(
    '"kept": a line worth following (fork from it); "discarded": a dead end',
  ),
  reason: oneLine.describe('One line: why, e.g. "eval/loss 0.31 beats parent 0.35"'),
});
export type MarkRequest = z.infer<typeof markRequest>;

/** `POST /api/notes`: a note on a run or an experiment. */
export const noteRequest = z.strictObject({
  run_id: id.optional().describe("The run the note is about"),
  experiment: experimentRef.optional().describe(
    'Or the experiment it is about: "<project>/<experiment>"',
  ),
  text: z.string().trim().min(1, "must not be empty").max(MAX_NOTE_LENGTH).describe(
    "The note: what was tried, what was learnt, what to try next",
  ),
}).superRefine(runOrExperiment);
export type NoteRequest = z.infer<typeof noteRequest>;

/** `GET /api/lineage?run_id=` or `?experiment=<project>/<experiment>`. */
export const lineageQuery = z.object({
  run_id: id.optional().describe("The tree this run is part of"),
  experiment: experimentRef.optional().describe(
    'Or every tree of an experiment: "<project>/<experiment>"',
  ),
}).superRefine(runOrExperiment);
export type LineageQuery = z.infer<typeof lineageQuery>;

/** `GET /api/runs/compare/code?runs=a,b`: the two runs whose code is compared. */
export const codeCompareQuery = z.object({
  runs: z.string().max(200).transform((s) => s.split(",").map((r) => r.trim()).filter(Boolean))
    .pipe(z.array(id).length(2, "must name exactly 2 runs (comma-separated)")),
});

/** A note as the API returns it. */
export interface Note {
  id: string;
  run_id: string | null;
  project: string;
  experiment: string | null;
  text: string;
  author: string;
  created_at: string;
}

/** One run in a tree. */
export interface LineageNode {
  run_id: string;
  name: string;
  status: RunStatus;
  job_id: string | null;
  parent_run: string | null;
  /** The checkpoint it resumed from, or null. */
  resume_from: string | null;
  mark: RunMark | null;
  primary_metric: PrimaryMetric | null;
  /** What its fork changed from the parent (null: not made by fork_run). */
  fork_overrides: ForkOverrides | null;
  /** The commit of its code (null: no snapshot or no git). */
  commit: string | null;
  created_at: string;
  children: LineageNode[];
}

/** `GET /api/lineage`: the trees (roots first, oldest first). */
export interface Lineage {
  /** What was asked: a run's tree or an experiment's. */
  run_id: string | null;
  project: string;
  experiment: string | null;
  roots: LineageNode[];
  /** Runs in the trees. */
  runs: number;
  kept: number;
  discarded: number;
  /** The best kept run by its primary metric (what to fork next), or null. */
  best_kept: string | null;
}

/** `GET /api/runs/{id}` also carries these: the run's code and its notes. */
export interface RunCodeAndNotes {
  /** The code the run ran (null: no snapshot, e.g. an SDK or imported run). */
  code: Provenance | null;
  notes: Note[];
}

/** One file's change in a comparison of two runs' code. */
export interface FileCodeChange {
  path: string;
  /** only_a / only_b: only that run changed the file; differs: both did, not the same way. */
  change: "only_a" | "only_b" | "differs";
  /** A line diff from run a's patch of the file to run b's (lines start with " ", "-", "+"). */
  diff: string;
}

/** `GET /api/runs/compare/code`: how two runs' code differs. */
export interface CodeComparison {
  a: string;
  b: string;
  same_code: boolean;
  /** Both commits (null: no snapshot or no git). */
  commits: { a: string | null; b: string | null };
  /** What the comparison could not cover (a diff kept only as a hash, a missing snapshot). */
  problems: string[];
  files: FileCodeChange[];
}
