/**
 * Evaluation jobs may write their results as JSON to `$GPUCTL_EVAL_OUTPUT` instead of using
 * the SDK. When such a job ends, the agent reads that file and forwards the metrics as an
 * `sdk` frame, before the job's end, so the server records them on the evaluation.
 */
import type { DispatchSpec } from "../protocol/agent.ts";
import type { AttemptRef, NewDataFrame } from "./frames.ts";
import type { JobFiles } from "./job_files.ts";

/** The largest results file read; evaluation metrics are a handful of numbers. */
export const MAX_EVAL_OUTPUT_BYTES = 1024 * 1024;

/** What the results file held: metrics, or why it could not be used. */
export type EvalOutput =
  | { metrics: Record<string, unknown>; suite?: string }
  | { error: string }
  | null;

/** Parses the results file's text: `{"metrics": {...}, "suite"?}` or a flat object of metrics. */
export function parseEvalOutput(text: string): EvalOutput {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    // The parser's message quotes the text: it is not repeated.
    return { error: "not JSON" };
  }
  if (!doc || typeof doc !== "object" || Array.isArray(doc)) return { error: "not a JSON object" };
  const obj = doc as Record<string, unknown>;
  const metrics = obj.metrics && typeof obj.metrics === "object" && !Array.isArray(obj.metrics)
    ? obj.metrics as Record<string, unknown>
    : obj;
  const clean: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(metrics)) {
    if (k === "suite" && metrics === obj) continue;
    if (typeof v === "number") clean[k] = Number.isFinite(v) ? v : String(v);
    else if (typeof v === "string" || typeof v === "boolean") clean[k] = v;
  }
  if (Object.keys(clean).length === 0) return { error: "holds no metrics" };
  const suite = typeof obj.suite === "string" ? obj.suite : undefined;
  return suite ? { metrics: clean, suite } : { metrics: clean };
}

/**
 * Creates the folder of an evaluation job's results file, so the job can just write it. It
 * is in the job's working dir: made as the job's user (see job_files.ts), who must own it to
 * write there.
 */
export async function prepareEvalOutput(spec: DispatchSpec, files: JobFiles): Promise<void> {
  const path = spec.kind === "EVALUATE" ? spec.env.GPUCTL_EVAL_OUTPUT : undefined;
  if (!path || !path.includes("/")) return;
  try {
    await files.makeDir(path.slice(0, path.lastIndexOf("/")));
  } catch {
    // the working dir is missing or read-only: the runner reports the real problem
  }
}

/**
 * Reads the results of an evaluation attempt, if it is one and wrote any. The file is the
 * job's: it is read with the job's rights, only when it is a regular file, and never quoted
 * in a problem.
 */
export async function readEvalOutput(spec: DispatchSpec, files: JobFiles): Promise<EvalOutput> {
  const path = spec.kind === "EVALUATE" ? spec.env.GPUCTL_EVAL_OUTPUT : undefined;
  if (!path) return null;
  const found = await files.read(path, MAX_EVAL_OUTPUT_BYTES + 1);
  if ("missing" in found) return null; // the job used the SDK, or wrote nothing
  if ("problem" in found) return { error: found.problem };
  if (found.bytes.length > MAX_EVAL_OUTPUT_BYTES) {
    return { error: `is more than ${MAX_EVAL_OUTPUT_BYTES} bytes` };
  }
  return parseEvalOutput(new TextDecoder().decode(found.bytes));
}

/** The `sdk` frame that carries the results. */
export function evalFrame(
  ref: AttemptRef,
  output: { metrics: Record<string, unknown>; suite?: string },
): NewDataFrame {
  return {
    type: "sdk",
    stream: "data",
    ...ref,
    batch: {
      evaluation: output.suite
        ? { metrics: output.metrics, suite: output.suite }
        : { metrics: output.metrics },
    },
  } as NewDataFrame;
}
