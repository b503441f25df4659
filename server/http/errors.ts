/**
 * Error answers over HTTP: `HttpError` for refusals only the HTTP face makes, each domain
 * error's status, and the one JSON body every error has.
 */
import { ServiceError, type ServiceErrorKind } from "../errors.ts";

/**
 * A refusal that only the HTTP face makes (a body too large, a wrong content type, too many
 * streams, a method not allowed); the domain's own refusals are `ServiceError`s.
 */
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

/** The status the REST face gives each kind of domain error. */
export const STATUS_OF_KIND: Record<ServiceErrorKind, number> = {
  validation: 400,
  unauthorized: 401,
  scope: 403,
  not_found: 404,
  conflict: 409,
  too_many: 429,
  storage_full: 507,
};

/** The status and body of an error the app knows; null for anything else (a 500). */
export function errorResponseOf(
  err: unknown,
): { status: number; body: ReturnType<typeof errorBody> } | null {
  if (err instanceof HttpError) {
    return { status: err.status, body: errorBody(err.code, err.message, err.details) };
  }
  if (err instanceof ServiceError) {
    return {
      status: STATUS_OF_KIND[err.kind],
      body: errorBody(err.code, err.message, err.details),
    };
  }
  return null;
}
