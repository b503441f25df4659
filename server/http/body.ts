/** Request bodies and query strings, read under a size cap and validated; a 4xx says why not. */
import type { z } from "zod";
import { HttpError } from "./errors.ts";
import { validationError } from "../errors.ts";
import { readCappedBytes } from "../read_body.ts";

/** The largest request body accepted. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;

/** Reads a JSON body of at most MAX_BODY_BYTES and validates it; 4xx with the reason otherwise. */
export async function readJson<S extends z.ZodType>(
  req: Request,
  schema: S,
  what: string,
): Promise<z.infer<S>> {
  const declared = Number(req.headers.get("content-length") ?? "0");
  if (declared > MAX_BODY_BYTES) throw tooLarge(declared);
  const text = await readCapped(req);
  if (text.trim() === "") {
    throw new HttpError(
      400,
      "ValidationError",
      `Invalid ${what}: the request body is empty, JSON expected`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new HttpError(
      400,
      "ValidationError",
      `Invalid ${what}: the body is not JSON: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw validationError(what, parsed.error);
  return parsed.data;
}

/** Validates query parameters (all strings) with a schema that coerces them. */
export function readQuery<S extends z.ZodType>(url: string, schema: S): z.infer<S> {
  const params = Object.fromEntries(new URL(url).searchParams);
  const parsed = schema.safeParse(params);
  if (!parsed.success) throw validationError("query", parsed.error);
  return parsed.data;
}

async function readCapped(req: Request): Promise<string> {
  const bytes = await readCappedBytes(req, MAX_BODY_BYTES);
  if (typeof bytes === "number") throw tooLarge(bytes);
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch (err) {
    throw new HttpError(400, "ValidationError", "Invalid body: it is not UTF-8 text", {
      cause: err,
    });
  }
}

function tooLarge(bytes: number): HttpError {
  return new HttpError(
    413,
    "PayloadTooLarge",
    `Request body too large: ${bytes} bytes, at most ${MAX_BODY_BYTES} accepted; send smaller batches`,
  );
}
