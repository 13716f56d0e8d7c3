/**
 * Typed errors, one class per kind of failure, chosen by the HTTP status of memhub's answer.
 *
 * The class names are Mem0's TypeScript SDK's, so a `catch` written for Mem0 keeps working;
 * each error also carries memhub's own `type` (docs/api.md, "Errors"), the status, the
 * per-field `details` of a 422, and `retryAfter` (seconds) when the server sent one.
 */

/** One problem of a 422 `ValidationError`: where (`body.messages[0].content`) and what. */
export interface ErrorDetail {
  loc: string;
  message: string;
}

export interface MemoryErrorOptions {
  status?: number;
  type?: string;
  details?: ErrorDetail[];
  retryAfter?: number;
  cause?: unknown;
}

/** Every error this client throws. */
export class MemoryError extends Error {
  /** HTTP status of the answer; undefined when no answer came (see {@link NetworkError}). */
  readonly status: number | undefined;
  /** memhub's error kind (`Unauthorized`, `MemoryNotFound`, `UsageError`...). */
  readonly type: string | undefined;
  /** `HTTP_<status>`, or `NETWORK` / `CLIENT` when the server never answered. */
  readonly errorCode: string;
  readonly details: ErrorDetail[];
  /** Seconds the server asked to wait before retrying (429, 409, 502, 503). */
  readonly retryAfter: number | undefined;

  constructor(message: string, options: MemoryErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.status = options.status;
    this.type = options.type;
    this.errorCode = options.status === undefined ? "CLIENT" : `HTTP_${options.status}`;
    this.details = options.details ?? [];
    this.retryAfter = options.retryAfter;
  }
}

/** 401: no key, a malformed header, an unknown or revoked key. */
export class AuthenticationError extends MemoryError {}

/** 403: a tenant key on an admin route. A kind of {@link AuthenticationError}, as in Mem0. */
export class PermissionDeniedError extends AuthenticationError {}

/** 404: no such memory in the caller's scope (or a route this server does not have). */
export class MemoryNotFoundError extends MemoryError {}

/** 400 / 422: input memhub refuses; nothing was written. `details` lists each problem. */
export class ValidationError extends MemoryError {}

/** 409: a concurrent change won, or the text duplicates a current fact. Mem0 files it under
 * {@link ValidationError}; it is a subclass so both `catch`es work. Retrying often works. */
export class ConflictError extends ValidationError {}

/** 409 `NotRestorable` from `restore`: the memory was erased (the user's delete, or the
 * retention purge), is current, or its text is current again. Retrying cannot help. */
export class NotRestorableError extends ConflictError {}

/** 413: the request body is over the server's `MEMHUB_MAX_BODY_BYTES`. */
export class MemoryQuotaExceededError extends MemoryError {}

/** 429: over the key's rate or the tenant's queued backlog; see `retryAfter`. */
export class RateLimitError extends MemoryError {}

/** No answer (connection refused, DNS, timeout), or 408 / 502 / 503 / 504. */
export class NetworkError extends MemoryError {
  constructor(message: string, options: MemoryErrorOptions = {}) {
    super(message, options);
    if (options.status === undefined) {
      (this as { errorCode: string }).errorCode = "NETWORK";
    }
  }
}

/** 500: the server failed; its log has the details. */
export class ServerError extends MemoryError {}

/** This client's own configuration cannot work (bad URL, a refused provider, a bad flag). */
export class ConfigurationError extends MemoryError {}

type ErrorClass = new (message: string, options?: MemoryErrorOptions) => MemoryError;

const BY_STATUS: Readonly<Record<number, ErrorClass>> = {
  400: ValidationError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: MemoryNotFoundError,
  408: NetworkError,
  409: ConflictError,
  413: MemoryQuotaExceededError,
  422: ValidationError,
  429: RateLimitError,
  502: NetworkError,
  503: NetworkError,
  504: NetworkError,
};

/** memhub types that name a narrower class than their status does. */
const BY_TYPE: Readonly<Record<string, ErrorClass>> = {
  "409 NotRestorable": NotRestorableError,
};

function errorClassFor(status: number, type?: string): ErrorClass {
  const narrower = BY_TYPE[`${status} ${type ?? ""}`];
  if (narrower !== undefined) return narrower;
  const known = BY_STATUS[status];
  if (known !== undefined) return known;
  if (status >= 500) return ServerError;
  if (status >= 400) return ValidationError;
  return MemoryError;
}

function parseDetails(value: unknown): ErrorDetail[] {
  if (!Array.isArray(value)) return [];
  return value
    .filter((item): item is Record<string, unknown> => typeof item === "object" && item !== null)
    .map((item) => ({ loc: String(item["loc"] ?? ""), message: String(item["message"] ?? "") }));
}

function parseRetryAfter(header: string | null | undefined): number | undefined {
  if (header === null || header === undefined || header.trim() === "") return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds;
  const when = Date.parse(header); // an HTTP date is allowed too
  return Number.isNaN(when) ? undefined : Math.max(0, (when - Date.now()) / 1000);
}

/**
 * The error for an answer with status `status` and body `body` (memhub's
 * `{"error", "type", "details"}`, or any text a proxy in between sent).
 */
export function errorFromResponse(
  status: number,
  body: string,
  retryAfterHeader?: string | null,
): MemoryError {
  let message = body.trim() === "" ? `HTTP ${status}` : body.trim();
  let type: string | undefined;
  let details: ErrorDetail[] = [];
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === "object" && parsed !== null) {
      const record = parsed as Record<string, unknown>;
      if (typeof record["error"] === "string") message = record["error"];
      else if (typeof record["detail"] === "string") message = record["detail"];
      if (typeof record["type"] === "string") type = record["type"];
      details = parseDetails(record["details"]);
    }
  } catch {
    // not JSON: a proxy's page; keep the text as the message
  }
  const ErrorKind = errorClassFor(status, type);
  const options: MemoryErrorOptions = { status, details };
  if (type !== undefined) options.type = type;
  const retryAfter = parseRetryAfter(retryAfterHeader);
  if (retryAfter !== undefined) options.retryAfter = retryAfter;
  return new ErrorKind(`${status}${type ? ` ${type}` : ""}: ${message}`, options);
}
