/**
 * The fields every REST schema is built from: names, free text, ids, commands, free-form JSON
 * and comma lists, with the limits they hold to, and the query of paginated lists.
 */
import { z } from "zod";

/** The longest name (job, run, project, experiment, token, tag) accepted anywhere. */
export const MAX_NAME_LENGTH = 200;
/** The longest free-text string (a command, a path, an env value, a log line) accepted. */
export const MAX_TEXT_LENGTH = 65_536;
/** How deep free-form JSON (configs, metrics, event data) may nest. */
export const MAX_JSON_DEPTH = 32;

/** A name: 1–200 characters after trimming, without control characters. */
export const name = z.string().trim().min(1, "must not be empty").max(MAX_NAME_LENGTH)
  // deno-lint-ignore no-control-regex -- refusing control characters is the point
  .regex(/^[^\x00-\x1f\x7f-\x9f]*$/, "must not contain control characters");
/** Free text up to MAX_TEXT_LENGTH. */
export const text = z.string().max(MAX_TEXT_LENGTH);
/** A gpuctl id (job, run, checkpoint, …). */
export const id = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "must be a gpuctl id");

/** An environment variable's name. */
export const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;

/** A command: an argv array, or a string run with bash -lc. */
export const command = z.union([
  z.array(text).min(1, "must name a program").max(4096),
  text.min(1, "must not be empty"),
]);

/** GPUs one job asks for, all on one node. */
export const gpuCount = z.number().int().min(0).max(64);

/** A job's priority: higher runs first. */
export const priority = z.number().int().min(-1_000_000).max(1_000_000);

/** JSON nested at most MAX_JSON_DEPTH levels, any shape. */
export const freeJson = z.unknown().superRefine((value, ctx) => {
  if (jsonDepth(value) > MAX_JSON_DEPTH) {
    ctx.addIssue({ code: "custom", message: `nests deeper than ${MAX_JSON_DEPTH} levels` });
  }
});
/** An object of free-form JSON values (configs, metrics). */
export const freeObject = z.record(z.string().max(MAX_NAME_LENGTH), freeJson);

function jsonDepth(value: unknown, depth = 0): number {
  if (depth > MAX_JSON_DEPTH) return depth;
  if (value === null || typeof value !== "object") return depth;
  let deepest = depth + 1;
  for (const v of Object.values(value as Record<string, unknown>)) {
    deepest = Math.max(deepest, jsonDepth(v, depth + 1));
    if (deepest > MAX_JSON_DEPTH) break;
  }
  return deepest;
}

/** A comma-separated list in a query string (`a,b,c`), blanks dropped. */
export const commaList = z.string().max(20_000).transform((s) =>
  s.split(",").map((x) => x.trim()).filter(Boolean)
);

/** Query strings of paginated lists. */
export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional().describe(
    "How many items to return (at most 1000)",
  ),
  cursor: z.string().regex(/^[0-9]{1,18}$/, "must be a cursor returned by this list").optional()
    .describe("The next_cursor of the previous page, to get the page after it"),
});
