import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import {
  digestSecret,
  resolveAccessToken,
  resolveApiKey,
  resolveAuthToken,
} from '../../engine/identity/account-store';
import type { Principal } from '../../engine/platform/principal';
import { type CredentialCache, startCredentialCache } from '../../engine/identity/credential-cache';
import type { AuditOperation } from '../../engine/store/audit-trail';
import type { Actor } from '../../engine/platform/principal';
import type { Database } from '../../engine/platform/database';
import { Forbidden, Unauthorized } from '../../engine/platform/errors';
import {
  type ConsoleSession,
  resolveConsoleSession,
  sameCsrfToken,
} from '../../engine/identity/console-sessions';
import { consumeRateLimit } from '../../engine/platform/rate-limiter';
import { TooManyRequests } from '../../engine/platform/errors';
import { httpRateLimited } from '../../engine/platform/metrics';
import { DOCS_PREFIX } from './openapi';

/**
 * How a route authenticates:
 * - `credentials` (default): Authorization header required; `key` on the query string is refused.
 * - `webhook`: Authorization header, or else `key=<AUTH_TOKEN>` on the query string.
 * - `optional`: credentials used when valid, never required (health check, unknown routes).
 * - `none`: the route authenticates on its own (the OAuth token endpoint).
 */
export type AuthMode = 'credentials' | 'webhook' | 'optional' | 'none';

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthMode;
    /** Entity type named in ERROR/DENIED audit records of this route. */
    auditEntity?: string;
    auditOperation?: AuditOperation;
    /**
     * False: anonymous calls are not counted against the caller's address. The health check must answer
     * (503, saying what is down) even when the rate-limit store, the database, is what is down.
     */
    anonymousRateLimit?: boolean;
  }
  interface FastifyRequest {
    principal: Principal | null;
    actor: Actor;
    /** Set when the request was authenticated by a web console session cookie (no Authorization header). */
    consoleSession: ConsoleSession | null;
  }
}

const UNAUTHORIZED = 'Unauthorized: missing or invalid credentials.';

/** The web console's session cookie (api/console). */
export const CONSOLE_COOKIE = 'pas_console';
/** The header a console page sends its session's CSRF token in, on every change. */
export const CSRF_HEADER = 'x-csrf-token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The value of one cookie of a request, or undefined. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function parseAuthorization(
  header: string,
): { kind: 'pair'; sid: string; token: string } | { kind: 'oauth'; token: string } | null {
  const space = header.indexOf(' ');
  if (space < 0) return null;
  const scheme = header.slice(0, space).toLowerCase();
  const value = header.slice(space + 1).trim();
  if (scheme === 'bearer') {
    const colon = value.indexOf(':');
    if (colon > 0) return { kind: 'pair', sid: value.slice(0, colon), token: value.slice(colon + 1) };
    return value ? { kind: 'oauth', token: value } : null;
  }
  if (scheme === 'basic') {
    const decoded = Buffer.from(value, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { kind: 'pair', sid: decoded.slice(0, colon), token: decoded.slice(colon + 1) };
  }
  return null;
}

function queryKey(request: FastifyRequest): string | undefined {
  const query = request.query as Record<string, unknown> | undefined;
  const key = query?.key;
  return typeof key === 'string' ? key : undefined;
}

async function resolvePrincipal(
  db: Database,
  cache: CredentialCache,
  request: FastifyRequest,
  mode: AuthMode,
): Promise<Principal | null> {
  const header = request.headers.authorization;
  // A present Authorization header wins over `key`. Cache keys carry the secret's digest, never the secret.
  if (header !== undefined) {
    const parsed = parseAuthorization(header);
    if (!parsed) return null;
    return parsed.kind === 'pair'
      ? cache.resolve(`key:${parsed.sid}:${digestSecret(parsed.token)}`, () =>
          resolveApiKey(db, parsed.sid, parsed.token),
        )
      : cache.resolve(`oauth:${digestSecret(parsed.token)}`, () => resolveAccessToken(db, parsed.token));
  }
  const key = queryKey(request);
  if (key !== undefined && mode === 'webhook') {
    return cache.resolve(`token:${digestSecret(key)}`, () => resolveAuthToken(db, key));
  }
  return null;
}

function auditSource(request: FastifyRequest): 'API' | 'SDK' | 'PLATFORM' {
  if (request.consoleSession) return 'PLATFORM';
  const userAgent = request.headers['user-agent'];
  return userAgent && /everysk/i.test(userAgent) ? 'SDK' : 'API';
}

/**
 * Resolves credentials, then charges the caller's rate-limit window (per account SID or OAuth
 * client; per client address when unauthenticated) and sets the rate-limit headers, so even a 401
 * or a 429 tells the client where it stands.
 */
export default fp(
  async function authentication(app: FastifyInstance, options: { db: Database; rateLimitPerMinute: number }) {
    const { db, rateLimitPerMinute } = options;
    // Credentials resolved once are served from memory until a change to them is notified
    // (engine/identity/credential-cache.ts): one database round trip less per request.
    const cache = startCredentialCache(db, (message, error) => app.log.warn({ err: error }, message));
    app.addHook('onClose', () => cache.close());
    app.decorateRequest('principal', null);
    app.decorateRequest('consoleSession', null);
    app.decorateRequest('actor', {
      getter(this: FastifyRequest): Actor {
        if (!this.principal) throw new Unauthorized(UNAUTHORIZED);
        return {
          principal: this.principal,
          source: auditSource(this),
          ip: this.ip,
          userAgent: this.headers['user-agent'] ?? null,
        };
      },
    });

    app.addHook('onRequest', async (request, reply) => {
      // Unknown routes answer 404 and the docs page is public: credentials are optional there.
      const mode: AuthMode =
        request.is404 || request.url.startsWith(DOCS_PREFIX)
          ? 'optional'
          : (request.routeOptions.config.auth ?? 'credentials');
      let principal = mode === 'none' ? null : await resolvePrincipal(db, cache, request, mode);
      // Without an Authorization header, a web console session's cookie authenticates (same origin,
      // SameSite=Strict); a change must also carry the session's CSRF token.
      const cookie =
        mode === 'none' || request.headers.authorization !== undefined
          ? undefined
          : cookieValue(request.headers.cookie, CONSOLE_COOKIE);
      if (!principal && cookie !== undefined) {
        const session = await resolveConsoleSession(db, cookie);
        if (session) {
          request.consoleSession = session;
          principal = session.principal;
        }
      }
      request.principal = principal;
      if (!principal && request.routeOptions.config.anonymousRateLimit === false) return;
      const bucket = principal ? `cred:${principal.credentialId}` : `ip:${request.ip}`;
      const state = await consumeRateLimit(db, bucket, rateLimitPerMinute);
      reply.header('X-Service-Rate-Limit-Allowed', state.allowed);
      reply.header('X-Service-Rate-Limit-Remaining', state.remaining);
      reply.header('X-Service-Rate-Limit-Reset', state.resetSeconds);
      if (state.limited) {
        reply.header('Retry-After', state.resetSeconds);
        httpRateLimited.inc();
        throw new TooManyRequests();
      }
      if (!principal && (mode === 'credentials' || mode === 'webhook')) throw new Unauthorized(UNAUTHORIZED);
      const session = request.consoleSession;
      if (session && !SAFE_METHODS.has(request.method)) {
        const header = request.headers[CSRF_HEADER];
        if (!sameCsrfToken(session, typeof header === 'string' ? header : undefined)) {
          throw new Forbidden(
            `Forbidden: a change from the web console must carry its session's CSRF token in ${CSRF_HEADER}.`,
          );
        }
      }
    });
  },
  { name: 'authentication' },
);
