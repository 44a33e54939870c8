/**
 * Domain errors. Each carries the HTTP status the API answers with and a message that is safe to
 * show a client; one handler in api/ turns them into `{code, message}`.
 */
export class DomainError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

export class InvalidInput extends DomainError {
  constructor(message: string) {
    super(400, message);
  }
}

export class Unauthorized extends DomainError {
  constructor(message = 'Unauthorized: missing or invalid credentials.') {
    super(401, message);
  }
}

export class Forbidden extends DomainError {
  constructor(message = 'Forbidden: the credentials lack permission for this resource.') {
    super(403, message);
  }
}

export class NotFound extends DomainError {
  constructor(message: string) {
    super(404, message);
  }
}

export class Conflict extends DomainError {
  constructor(message: string) {
    super(409, message);
  }
}

export class PayloadTooLarge extends DomainError {
  constructor(message: string) {
    super(413, message);
  }
}

export class TooManyRequests extends DomainError {
  constructor(message = 'Too Many Requests: rate limit exceeded, retry with exponential backoff.') {
    super(429, message);
  }
}

/** A dependency (the database) is unreachable: the client should retry after `retryAfterSeconds`. */
export class ServiceUnavailable extends DomainError {
  constructor(
    message = 'Service Unavailable: the database is unreachable; retry shortly.',
    readonly retryAfterSeconds = 2,
  ) {
    super(503, message);
  }
}

/**
 * A secret exists but this process cannot open it: its master key is not the one this process holds
 * (a restore onto a machine without the key file, a mistyped SECRETS_KEY), or none is configured.
 * The message names the keys by their ids, never by their bytes.
 */
export class SecretKeyUnavailable extends DomainError {
  constructor(message: string) {
    super(503, message);
  }
}
