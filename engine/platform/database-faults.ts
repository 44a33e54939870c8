/**
 * Errors that mean "the database cannot be reached right now", as opposed to a bad query: refused or
 * broken connections, a server shutting down or starting up (57P0x), too many connections (53300), the
 * connection-exception class (08xxx), and knex giving up on acquiring a connection. The API answers them
 * with 503 and Retry-After instead of 500, and opens its circuit breaker.
 */
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

// node-postgres reports a connection lost mid-query with these messages and no code.
const UNAVAILABLE_MESSAGES =
  /Connection terminated|connection error|timeout exceeded when trying to connect/i;

interface ErrorLike {
  name?: unknown;
  code?: unknown;
  message?: unknown;
  cause?: unknown;
}

export function isDatabaseUnavailable(error: unknown): boolean {
  // Duck-typed, not instanceof Error: socket errors come from Node's own realm, which under jest is not
  // the realm of the code looking at them.
  let cause = error as ErrorLike | null | undefined;
  for (let depth = 0; typeof cause === 'object' && cause !== null && depth < 5; depth++) {
    if (cause.name === 'KnexTimeoutError') return true;
    const { code, message } = cause;
    if (typeof code === 'string' && (UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
    if (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message)) return true;
    cause = cause.cause as ErrorLike | null | undefined;
  }
  return false;
}
