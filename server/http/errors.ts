import type { ZodError } from "zod";

/** The one error type thrown anywhere a request cannot be served; the app turns it into JSON. */
export class HttpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details?: unknown;

  constructor(
    status: number,
    code: string,
    message: string,
    options: { cause?: unknown; details?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.status = status;
    this.code = code;
    this.details = options.details;
  }
}

/** The JSON body of every error answer. */
export function errorBody(code: string, message: string, details?: unknown) {
  return { error: details === undefined ? { code, message } : { code, message, details } };
}

/** A 400 that names each offending field and what is wrong with it. */
export function validationError(where: string, err: ZodError): HttpError {
  const issues = err.issues.slice(0, 20).map((i) => ({
    field: i.path.length ? i.path.map(String).join(".") : where,
    problem: i.message,
  }));
  const first = issues[0];
  const more = err.issues.length > 1 ? ` (and ${err.issues.length - 1} more)` : "";
  return new HttpError(
    400,
    "ValidationError",
    `Invalid ${where}: ${first.field}: ${first.problem}${more}`,
    { details: issues },
  );
}

/** Longest part of a caller's value (an id, a path) echoed back in an error message. */
export const MAX_ECHOED_CHARS = 100;

/**
 * A caller's value quoted for an error message, cut to 100 characters: an id of a megabyte
 * must not come back as a megabyte of message (or of log line).
 */
export function quoted(value: string): string {
  if (value.length <= MAX_ECHOED_CHARS) return `"${value}"`;
  // Not half of a surrogate pair at the cut.
  const cut = value.slice(0, MAX_ECHOED_CHARS).replace(/[\uD800-\uDBFF]$/, "");
  return `"${cut}…" (${value.length} characters)`;
}

export const notFound = (what: string, id: string) =>
  new HttpError(404, "NotFound", `${what} ${quoted(id)} does not exist`);

export const conflict = (message: string) => new HttpError(409, "Conflict", message);
