/**
 * Evaluation jobs may write their results as JSON to `$GPUCTL_EVAL_OUTPUT` instead of using
 * the SDK. When such a job ends, the agent reads that file and forwards the metrics as an
 * `sdk` frame, before the job's end, so the server records them on the evaluation.
 */
import type { DispatchSpec } from "../protocol/agent.ts";
import type { AttemptRef, NewDataFrame } from "./frames.ts";

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
  } catch (err) {
    return { error: `not JSON: ${(err as Error).message}` };
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

/** Creates the folder of an evaluation job's results file, so the job can just write it. */
export async function prepareEvalOutput(spec: DispatchSpec): Promise<void> {
  const path = spec.kind === "EVALUATE" ? spec.env.GPUCTL_EVAL_OUTPUT : undefined;
  if (!path || !path.includes("/")) return;
  try {
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
  } catch {
    // the working dir is missing or read-only: the runner reports the real problem
  }
}

/** Reads the results of an evaluation attempt, if it is one and wrote any. */
export async function readEvalOutput(spec: DispatchSpec): Promise<EvalOutput> {
  const path = spec.kind === "EVALUATE" ? spec.env.GPUCTL_EVAL_OUTPUT : undefined;
  if (!path) return null;
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path);
  } catch {
    return null; // the job used the SDK, or wrote nothing
  }
  try {
    const { size } = await file.stat();
    if (size > MAX_EVAL_OUTPUT_BYTES) {
      return { error: `is ${size} bytes, more than ${MAX_EVAL_OUTPUT_BYTES}` };
    }
    const buf = new Uint8Array(size);
    let read = 0;
    while (read < size) {
      const n = await file.read(buf.subarray(read));
      if (n === null) break;
      read += n;
    }
    return parseEvalOutput(new TextDecoder().decode(buf.subarray(0, read)));
  } finally {
    file.close();
  }
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
