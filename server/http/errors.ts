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

export const notFound = (what: string, id: string) =>
  new HttpError(404, "NotFound", `${what} "${id}" does not exist`);

export const conflict = (message: string) => new HttpError(409, "Conflict", message);
