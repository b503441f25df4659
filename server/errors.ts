/**
 * The domain's errors. Services throw them; each face maps them to its own form: REST to a
 * status and `{error: {code, message, details}}` (server/http/errors.ts), MCP to a tool error,
 * the console to a page or a form message. Messages are written for the person or agent who
 * sent the request: they name what is wrong and what to do.
 */
import type { ZodError } from "zod";

/** What kind of refusal or failure a service reports; each face picks its own form for it. */
export type ServiceErrorKind =
  | "validation"
  | "unauthorized"
  | "scope"
  | "not_found"
  | "conflict"
  | "too_many"
  | "storage_full";

/** One thing wrong with a request: the field's dotted path and the problem. */
export interface FieldProblem {
  field: string;
  problem: string;
}

/** The base of every domain error: a kind, a stable code (`NotFound`, `WriteScopeError`, …). */
export class ServiceError extends Error {
  readonly kind: ServiceErrorKind;
  readonly code: string;
  readonly details?: unknown;

  constructor(
    kind: ServiceErrorKind,
    code: string,
    message: string,
    options: { cause?: unknown; details?: unknown } = {},
  ) {
    super(message, { cause: options.cause });
    this.kind = kind;
    this.code = code;
    this.details = options.details;
  }
}

/** The request names something that does not exist. */
export class NotFoundError extends ServiceError {
  constructor(message: string) {
    super("not_found", "NotFound", message);
  }
}

/** The request is valid but the thing it acts on is in the wrong state for it. */
export class ConflictError extends ServiceError {
  constructor(message: string, details?: unknown) {
    super("conflict", "Conflict", message, { details });
  }
}

/** The request would pass a cap on concurrent work (its message names the cap). */
export class TooManyError extends ServiceError {
  constructor(code: string, message: string, details?: unknown) {
    super("too_many", code, message, { details });
  }
}

/**
 * The request would pass a budget of its token (`BudgetExceeded`): the details name the
 * budget, what is used, what the request adds and the limit.
 */
export class BudgetExceededError extends TooManyError {
  constructor(
    message: string,
    details: { budget: string; used: number; requested: number; limit: number; token: string },
  ) {
    super("BudgetExceeded", message, details);
  }
}

/** The request's input is wrong; `details` lists each field and its problem. */
export class ValidationError extends ServiceError {
  declare readonly details: FieldProblem[];
  constructor(message: string, problems: FieldProblem[]) {
    super("validation", "ValidationError", message, { details: problems });
  }
}

/** No valid credential came with the request. */
export class UnauthorizedError extends ServiceError {
  constructor(message: string) {
    super("unauthorized", "Unauthorized", message);
  }
}

/** A credential came, but its scope is too low (`WriteScopeError` for read → write). */
export class ScopeError extends ServiceError {
  constructor(code: "ScopeError" | "WriteScopeError", message: string) {
    super("scope", code, message);
  }
}

/** The disk is full: nothing was stored; the same request may be sent again later. */
export class StorageFullError extends ServiceError {
  constructor(message = "The server's disk is full: nothing was stored; retry later") {
    super("storage_full", "StorageFull", message);
  }
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

/** `<What> "<id>" does not exist`. */
export const notFound = (what: string, id: string) =>
  new NotFoundError(`${what} ${quoted(id)} does not exist`);

export const conflict = (message: string, details?: unknown) => new ConflictError(message, details);

/** A validation error about one field, in the same form as a schema's. */
export function invalidField(where: string, field: string, problem: string): ValidationError {
  return new ValidationError(`Invalid ${where}: ${field}: ${problem}`, [{ field, problem }]);
}

/** A validation error that names each offending field of a zod failure (at most 20). */
export function validationError(where: string, err: ZodError): ValidationError {
  const issues = err.issues.slice(0, 20).map((i) => ({
    field: i.path.length ? i.path.map(String).join(".") : where,
    problem: i.message,
  }));
  const first = issues[0];
  const more = err.issues.length > 1 ? ` (and ${err.issues.length - 1} more)` : "";
  return new ValidationError(`Invalid ${where}: ${first.field}: ${first.problem}${more}`, issues);
}
