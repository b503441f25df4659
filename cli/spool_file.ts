// The SDK's spool files (`$GPUCTL_HOME/spool/<run id>.jsonl`, sdk/python/README.md "Spool file
// format"): a `{"type":"run", …registration}` line, then `{"type":"log", …batch}` lines. A
// crash may leave a torn last line, which is ignored; anything else malformed is an error.

import { sdkRunRegistration } from "../protocol/rest/sdk.ts";
import { partitionSdkBatch } from "../protocol/sdk_batch.ts";
import type { z } from "zod";

/** A parsed spool file: bodies exactly as the SDK wrote them, minus `type`. */
export interface SpoolFile {
  runId: string;
  /**
   * The `POST /api/sdk/runs` body, with `id` set; null for a file of log lines only, which a
   * live SDK writes when `gpuctl sync` moved its file away after registering the run.
   */
  registration: Record<string, unknown> | null;
  /** The `POST /api/sdk/runs/{id}/log` bodies, in file order. */
  batches: Record<string, unknown>[];
  /** True when a partial last line was left out. */
  tornLastLine: boolean;
  /** Items of log lines the server would refuse, left out (the rest of each line is sent). */
  refused: { line: number; path: string; message: string }[];
}

/** A spool file that cannot be replayed as it is. */
export class SpoolFormatError extends Error {
  override name = "SpoolFormatError";
}

/**
 * Parses a spool file's text. `fallbackId` (the file name's stem) is the run id when the run
 * line has none. Lines are validated with the server's own schemas, so a file that parses
 * here is one the server takes; the bodies are kept as written (NaN stays `"NaN"`).
 */
export function parseSpoolFile(text: string, fallbackId: string): SpoolFile {
  const lines = text.split("\n");
  // The writer ends every line with "\n", so what follows the last one was cut short by a
  // crash, unless it is a whole object that only lacks its newline.
  const last = lines.pop() ?? "";
  const lastObject = last.trim() === "" ? null : parseObject(last);
  const tornLastLine = last.trim() !== "" && lastObject === null;
  const objects: { line: number; value: Record<string, unknown> }[] = [];
  for (const [i, line] of lines.entries()) {
    if (line.trim() === "") continue;
    const value = parseObject(line);
    if (value === null) throw new SpoolFormatError(`line ${i + 1} is not a JSON object`);
    objects.push({ line: i + 1, value });
  }
  if (lastObject) objects.push({ line: lines.length + 1, value: lastObject });
  if (objects.length === 0) throw new SpoolFormatError("it has no complete line");
  const [head] = objects;
  let registration: Record<string, unknown> | null = null;
  if (head.value.type === "run") {
    registration = withoutType(head.value);
    registration.id ??= fallbackId;
    check(sdkRunRegistration, registration, head.line, "run line");
    objects.shift();
  }
  const refused: SpoolFile["refused"] = [];
  const batches = objects.map(({ line, value }) => {
    if (value.type !== "log") {
      throw new SpoolFormatError(
        `line ${line} has type ${JSON.stringify(value.type)}, expected "log"` +
          (value.type === "run" ? " (only the first line may be the run line)" : ""),
      );
    }
    // One bad item (a key the store cannot keep) must not make the whole file unsendable.
    const parts = partitionSdkBatch(withoutType(value))!;
    for (const item of parts.refused.items) refused.push({ line, ...item });
    return parts.raw;
  });
  const runId = registration ? String(registration.id) : fallbackId;
  return { runId, registration, batches, tornLastLine, refused };
}

function parseObject(line: string): Record<string, unknown> | null {
  try {
    const value = JSON.parse(line);
    return value !== null && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

function withoutType(value: Record<string, unknown>): Record<string, unknown> {
  const { type: _type, ...body } = value;
  return body;
}

function check(schema: z.ZodType, body: unknown, line: number, what: string): void {
  const parsed = schema.safeParse(body);
  if (parsed.success) return;
  const issue = parsed.error.issues[0];
  const field = issue.path.length ? issue.path.map(String).join(".") : "(whole line)";
  throw new SpoolFormatError(`line ${line}, a ${what}: ${field}: ${issue.message}`);
}
