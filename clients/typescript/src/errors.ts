/**
 * Typed errors. Every error the service answers is JSON `{"detail": ..., "code": ...}`
 * (422s add `errors`); the exception keeps both, the HTTP status and the parsed body.
 */

export interface FieldError {
  loc: (string | number)[];
  msg: string;
  type?: string;
  [key: string]: unknown;
}

export interface RBErrorOptions {
  code?: string;
  status?: number;
  body?: unknown;
  cause?: unknown;
}

/** Base class of every error this client throws. */
export class RBError extends Error {
  readonly detail: string;
  readonly code: string;
  readonly status: number | undefined;
  readonly body: unknown;

  constructor(detail: string, options: RBErrorOptions = {}) {
    super(options.code ? `${options.code}: ${detail}` : detail, { cause: options.cause });
    this.name = new.target.name;
    this.detail = detail;
    this.code = options.code ?? "";
    this.status = options.status;
    this.body = options.body;
  }
}

/** The client is missing its URL or token (options or RB_URL / RB_TOKEN). */
export class ConfigurationError extends RBError {}

/** The service could not be reached (refused, DNS, timeout), after the retries. */
export class ConnectionError extends RBError {}

/** An id that cannot be one path segment (`.` or `..`, which URL parsing would resolve away). */
export class InvalidIdError extends RBError {}

/** The service answered with an error status. */
export class APIError extends RBError {}

/** 400: the body is not valid JSON. */
export class BadRequestError extends APIError {}

/** 401: no token, or an unknown, revoked or expired one. */
export class AuthenticationError extends APIError {}

/** 403: the token lacks the scope, or the bank is archived. */
export class PermissionDeniedError extends APIError {}

/** 404: no such object in this token's bank. */
export class NotFoundError extends APIError {}

/** 409: a decision the item's state refuses, or an `external_id` another token of the bank sent first (`external_id_taken`). */
export class ConflictError extends APIError {}

/** 413: the body, the steps or the batch is over the service's limit. */
export class PayloadTooLargeError extends APIError {}

/** 422: the input is invalid; `errors` names each field and problem. */
export class ValidationError extends APIError {
  get errors(): FieldError[] {
    const body = this.body as { errors?: unknown } | null;
    return body && typeof body === "object" && Array.isArray(body.errors) ? (body.errors as FieldError[]) : [];
  }
}

/** 429: over the bank's per-token rate limit (after the retries). `retryAfter` is in seconds. */
export class RateLimitError extends APIError {
  readonly retryAfter: number | undefined;

  constructor(detail: string, options: RBErrorOptions & { retryAfter?: number | undefined } = {}) {
    super(detail, options);
    this.retryAfter = options.retryAfter;
  }
}

/** 5xx: the service failed (after the retries); 503 when the embedding model cannot load. */
export class ServerError extends APIError {}

/** `wait()` ran out of time; `trajectory` is the last state seen. */
export class WaitTimeoutError extends RBError {
  readonly trajectory: unknown;

  constructor(detail: string, trajectory: unknown) {
    super(detail, { code: "wait_timeout" });
    this.trajectory = trajectory;
  }
}

const BY_STATUS: Record<number, new (detail: string, options: RBErrorOptions) => APIError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  413: PayloadTooLargeError,
  422: ValidationError,
};

/** The typed error for an HTTP error answer (`body`: parsed JSON, or text). */
export function errorFor(status: number, body: unknown, retryAfter?: number): APIError {
  let detail: string;
  let code = "";
  if (body && typeof body === "object" && !Array.isArray(body)) {
    const fields = body as { detail?: unknown; code?: unknown };
    detail = fields.detail ? String(fields.detail) : `HTTP ${status}`;
    code = fields.code ? String(fields.code) : "";
  } else {
    detail = String(body ?? "").trim().slice(0, 500) || `HTTP ${status}`;
  }
  if (status === 429) return new RateLimitError(detail, { code, status, body, retryAfter });
  const cls = BY_STATUS[status] ?? (status >= 500 ? ServerError : APIError);
  return new cls(detail, { code, status, body });
}
